/* The slow path of recording, and each thread's life as the recorder sees it.
 *
 * at_record (at_record.h) falls through to here when the thread has no block or its block is
 * full. We hand the full block to the writer, take a free one (or wait for one in block mode,
 * or count the event as dropped), and record the event again. Signals are blocked while the
 * thread's state changes, so a handler that records on this thread finds it either before or
 * after the switch. A thread that ends hands over its partial block from a key destructor. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "recorder.h"

__thread struct at_thread at__self __attribute__((tls_model("initial-exec")));

uint64_t at__dropped_total; /* events dropped or overwritten while tracing; atomic, relaxed */
uint64_t at__threads_total; /* threads that took a block; atomic, relaxed */
static uint32_t block_seq;  /* numbers blocks as they are taken; atomic, relaxed */
extern pthread_key_t at__exit_key;

#define BLOCK_WAIT_NS (10 * 1000 * 1000ull)

int at__core_slow(void)
{
    int cpu = sched_getcpu();
    return cpu < 0 ? 0 : cpu;
}

/* Writes a THREAD record when the thread's name is new to the trace. */
static void note_name(struct at_thread *self)
{
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    if (strncmp(name, self->name, sizeof name) == 0)
        return;
    memcpy(self->name, name, sizeof name);
    at__meta_thread(self->tid, at__rdtsc(), name);
}

static void note_drops(struct at_thread *self)
{
    if (self->drop_count == 0)
        return;
    at__meta_lost(self->tid, AT_LOST_DROPPED, self->drop_count, self->drop_first_tsc,
                  self->drop_last_tsc);
    self->drop_count = 0;
}

static void drop(struct at_thread *self)
{
    uint64_t now = at__rdtsc();
    if (self->drop_count++ == 0)
        self->drop_first_tsc = now;
    self->drop_last_tsc = now;
    __atomic_fetch_add(&at__dropped_total, 1, __ATOMIC_RELAXED);
}

/* Whether every slot taken in a full block is committed. Only the last one can be pending: a
 * signal handler reaches the slow path while the call it interrupted holds the last slot, and
 * that call stores into the slot after the handler returns. */
static int last_slot_committed(struct at_ring_block *block)
{
    const struct at_event *last = &at__block_slots(block)[block->capacity - 1];
    return __atomic_load_n(&last->kind, __ATOMIC_ACQUIRE) != 0;
}

/* The block a handler could not hand over yet (see hand_over), once its last slot is in. */
static void hand_over_deferred(struct at_thread *self, int force)
{
    struct at_ring_block *block = self->deferred;
    if (block && (force || last_slot_committed(block))) {
        at__writer_submit(block, block->capacity);
        self->deferred = NULL;
    }
}

static void hand_over(struct at_thread *self)
{
    uint32_t used = self->next < self->capacity ? self->next : self->capacity;
    if (used == self->capacity && !last_slot_committed(self->block)) {
        hand_over_deferred(self, 1); /* a second nesting level: the older one goes now */
        self->deferred = self->block;
    } else {
        at__writer_submit(self->block, used);
    }
    self->block = NULL;
    self->slots = NULL;
    self->capacity = 0;
    self->next = 0;
    note_name(self);
}

static void first_event(struct at_thread *self)
{
    if (self->tid == 0) {
        self->tid = (uint32_t)gettid();
        __atomic_fetch_add(&at__threads_total, 1, __ATOMIC_RELAXED);
        note_name(self);
    }
    if (!self->exit_hook) {
        /* the destructor runs again if a later destructor records: it is set anew here */
        pthread_setspecific(at__exit_key, self);
        self->exit_hook = 1;
    }
}

/* Overwrite mode's losses, one entry per thread whose blocks were taken back, until the writer
 * turns them into LOST records (before a dump, and at the end): one record per block taken
 * back would make the metadata grow with the length of the run. */
static struct at_lost overwritten[AT_OVERWRITTEN_THREADS]; /* guarded by overwritten_lock */
static unsigned overwritten_count;
static pthread_mutex_t overwritten_lock = PTHREAD_MUTEX_INITIALIZER;

static void flush_overwritten_locked(void)
{
    for (unsigned i = 0; i < overwritten_count; i++)
        at__meta_lost(overwritten[i].tid, AT_LOST_OVERWRITTEN, overwritten[i].count,
                      overwritten[i].first_tsc, overwritten[i].last_tsc);
    overwritten_count = 0;
}

void at__overwritten_flush(void)
{
    pthread_mutex_lock(&overwritten_lock);
    flush_overwritten_locked();
    pthread_mutex_unlock(&overwritten_lock);
}

unsigned at__overwritten_take(struct at_lost *out, unsigned max, uint64_t timeout_ns)
{
    struct timespec until = at__monotonic_after(timeout_ns);
    if (pthread_mutex_clocklock(&overwritten_lock, CLOCK_MONOTONIC, &until) != 0)
        return 0;
    unsigned n = overwritten_count < max ? overwritten_count : max;
    memcpy(out, overwritten, n * sizeof *out);
    overwritten_count = 0;
    pthread_mutex_unlock(&overwritten_lock);
    return n;
}

static void note_overwritten(const struct at_lost *lost)
{
    __atomic_fetch_add(&at__dropped_total, lost->count, __ATOMIC_RELAXED);
    pthread_mutex_lock(&overwritten_lock);
    unsigned i = 0;
    while (i < overwritten_count && overwritten[i].tid != lost->tid)
        i++;
    if (i == AT_OVERWRITTEN_THREADS) {
        flush_overwritten_locked();
        i = 0;
    }
    if (i == overwritten_count) {
        overwritten[i] = *lost;
        overwritten_count++;
    } else {
        struct at_lost *entry = &overwritten[i];
        entry->count += lost->count;
        if (lost->first_tsc < entry->first_tsc)
            entry->first_tsc = lost->first_tsc;
        if (lost->last_tsc > entry->last_tsc)
            entry->last_tsc = lost->last_tsc;
    }
    pthread_mutex_unlock(&overwritten_lock);
}

static struct at_ring_block *take_block(struct at_thread *self)
{
    /* One number for the whole process, not per thread: the kernel reuses thread ids, and a
     * later thread with the same id must sort after the earlier one. */
    uint32_t seq = __atomic_fetch_add(&block_seq, 1, __ATOMIC_RELAXED);
    struct at_ring_block *block = at__ring_take(self->tid, seq);
    while (!block && at__config.mode == AT_MODE_BLOCK &&
           __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING) {
        at__writer_wait_free(BLOCK_WAIT_NS);
        block = at__ring_take(self->tid, seq);
    }
    for (int tries = 0; !block && at__config.mode == AT_MODE_OVERWRITE && tries < 8; tries++) {
        struct at_lost lost;
        block = at__ring_take(self->tid, seq);
        if (!block && (block = at__ring_steal_oldest(self->tid, seq, &lost)) && lost.count)
            note_overwritten(&lost);
    }
    return block;
}

/* Gives the thread a block with room; returns 0 when the event must be dropped instead. */
static int switch_block(struct at_thread *self)
{
    if (self->next < self->capacity)
        return 1; /* a signal handler switched blocks while we were on our way here */
    hand_over_deferred(self, 0);
    if (self->block)
        hand_over(self);
    first_event(self);
    struct at_ring_block *block = take_block(self);
    if (!block) {
        self->next = 0; /* keeps the counter far from wrapping while dropping */
        return 0;
    }
    note_drops(self);
    self->block = block;
    self->slots = at__block_slots(block);
    self->capacity = block->capacity;
    self->next = 0;
    return 1;
}

void at__record_slow(unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg, uint32_t name,
                     unsigned path)
{
    int saved_errno = errno;
    struct at_thread *self = &at__self;
    if (self->internal)
        return; /* capacity stays 0, so every event of this thread comes here */
    int state = __atomic_load_n(&at__state, __ATOMIC_ACQUIRE);
    if (AT_UNLIKELY(state != AT_STATE_RUNNING))
        state = at__ensure_started();
    if (state != AT_STATE_RUNNING) {
        self->next = 0;
        self->capacity = 0; /* after a stop: the block will not be written, keep out of it */
        if (state == AT_STATE_STARTING)
            __atomic_fetch_add(&at__dropped_total, 1, __ATOMIC_RELAXED);
        errno = saved_errno;
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int room = switch_block(self);
    if (!room)
        drop(self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (room)
        at_record(kind, actor, peer, msg, name, path);
    errno = saved_errno;
}

/* The pthread key destructor: the thread is ending, so its partial block goes to the writer. */
void at__thread_exit(void *unused)
{
    (void)unused;
    struct at_thread *self = &at__self;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    self->exit_hook = 0;
    if (__atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING) {
        if (self->block)
            hand_over(self);
        hand_over_deferred(self, 1);
        note_drops(self);
        at__meta_thread_exit(self->tid, at__rdtsc());
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* In a child after fork: the forking thread's block belongs to the parent. The child's one
 * thread starts again with no block, keeping only the current actor and the shim depth (the
 * fork may have been called from inside a handler). */
void at__record_after_fork(void)
{
    uint64_t actor = at__self.current_actor;
    uint32_t depth = at__self.depth;
    memset(&at__self, 0, sizeof at__self);
    at__self.current_actor = actor;
    at__self.depth = depth;
    /* the parent's losses are the parent's; its lock may have been held by another thread */
    overwritten_count = 0;
    pthread_mutex_init(&overwritten_lock, NULL);
}
