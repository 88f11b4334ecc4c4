/* The slow path of recording, and each thread's life as the recorder sees it.
 *
 * at_record (at_record.h) falls through to here, by way of lifecycle.c's entry (which starts
 * the recorder at the first event), when the thread has no block or its block is full. The
 * outermost call on the thread hands the full block to the writer, takes a free one (waiting
 * for one as may_wait says, or counting the event as dropped), and records the event again;
 * the invariants that make this safe against signal handlers recording on the same thread are
 * written in at_record.h. A signal handler (in_signal, signals.c) never starts the thread's
 * recording or takes a lock here: what would need it is dropped and counted. It may wait for a
 * block: the writer never waits for a lock a program thread holds. A thread that ends hands
 * over its partial block from a key destructor. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "at_vectors.h"
#include "losses.h"
#include "meta.h"
#include "record.h"
#include "takeback.h"
#include "writer.h"

#ifdef AT_BENCH_FLOOR
__thread struct at_floor_slot at__floor_ring[AT_FLOOR_SLOTS]
    __attribute__((tls_model("initial-exec")));
__thread uint32_t at__floor_next __attribute__((tls_model("initial-exec")));
#endif

static uint32_t block_seq;     /* numbers blocks as they are taken; atomic, relaxed */
static pthread_key_t exit_key; /* its destructor hands a thread's partial blocks over */

/* Writes a THREAD record when the thread's name is new to the trace. */
static void note_name(struct at_thread_state *self)
{
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    if (strncmp(name, self->name, sizeof name) == 0)
        return;
    memcpy(self->name, name, sizeof name);
    at__meta_thread(self->tid, at__rdtsc(), name);
}

/* In a signal handler, only if the metadata lock is free and its queue has room (the handler
 * may have interrupted this thread inside the queue, or malloc); else the count waits. */
static void note_drops(struct at_thread_state *self)
{
    if (self->drop_count == 0)
        return;
    int err = self->in_signal ? at__meta_lost_nowait(self->tid, AT_LOST_DROPPED, self->drop_count,
                                                     self->drop_first_tsc, at__rdtsc())
                              : at__meta_lost(self->tid, AT_LOST_DROPPED, self->drop_count,
                                              self->drop_first_tsc, at__rdtsc());
    if (err == 0 || !self->in_signal)
        self->drop_count = 0;
}

/* The time range of a run of drops is from the first to when it is noted (note_drops): no
 * clock read per dropped event. */
static void drop(struct at_thread_state *self)
{
    if (self->drop_count++ == 0)
        self->drop_first_tsc = at__rdtsc();
    at__ring_count_lost(AT_LOST_DROPPED, 1);
}

int at__in_signal_handler(void)
{
    return at__thread.in_signal != 0;
}

void at__record_drop(void)
{
    drop(&at__thread);
}

/* next and capacity in one store, so that a signal handler sees both old or both new. */
typedef uint64_t __attribute__((may_alias)) room_word;
_Static_assert(offsetof(struct at_thread, next) % 8 == 0 &&
                   offsetof(struct at_thread, capacity) == offsetof(struct at_thread, next) + 4,
               "next and capacity share one aligned 8-byte word");

static void set_room(struct at_thread_state *self, uint32_t next, uint32_t capacity)
{
    /* relaxed: only this thread and its signal handlers read it; the fence keeps the compiler
     * from moving the block's fields (set before) after it */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n((room_word *)&self->pub->next, (uint64_t)capacity << 32 | next,
                     __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Hands the thread's block to the writer: every slot taken in it is committed (at_record.h),
 * unless the writer took it back first (takeback.c). Signals are blocked. The block is
 * claimed before the room is closed: a writer that took it back read `next` before its
 * compare-exchange, so it must never see the room closed (next 0) while it can still win. */
static void hand_over(struct at_thread_state *self)
{
    uint32_t next = self->pub->next;
    int mine = at__takeback_claim(self);
    set_room(self, 0, 0);
    struct at_ring_block *block = self->block;
    self->block = NULL;
    self->pub->slots = NULL;
    /* Slots taken after the writer closed the room were never written: at__block_committed
     * stops there. */
    if (mine)
        at__writer_submit(block, at__block_committed(block, next));
    if (!self->in_signal)
        note_name(self);
}

/* In a signal handler too (thread_ready): the name then waits for the thread's next block
 * taken outside one, and the registry is joined only if that needs no allocation. */
static void first_event(struct at_thread_state *self)
{
    if (self->tid == 0) {
        self->tid = (uint32_t)gettid();
        __atomic_fetch_add(&at__threads_total, 1, __ATOMIC_RELAXED); /* a total, for the end */
        if (!self->in_signal)
            note_name(self);
    }
    if (!self->exit_hook) {
        /* the destructor runs again if a later destructor records: it is set anew here. An
         * ending thread does not join the registry again: glibc runs the destructors a bounded
         * number of times, and a thread left in the registry would have the writer read its
         * thread-local state after the thread is gone. Its blocks are handed over at its next
         * destructor run, or written by the finish. */
        pthread_setspecific(exit_key, self);
        self->exit_hook = 1;
        if (!self->exiting)
            at__takeback_register(self, !self->in_signal);
    }
}

/* The LOST record of a steal (the ring file's count was raised by at__ring_steal_oldest), kept
 * with the thread's others (losses.c); a full table is turned into LOST records first. */
static void note_overwritten(const struct at_lost *lost)
{
    while (at__losses_note(lost) < 0)
        at__meta_flush_losses();
}

#define TAKEBACK_WAIT_NS    (50 * 1000 * 1000ull)       /* a thread waits this long at a time, */
#define TAKEBACK_GIVE_UP_NS (5 * 1000 * 1000 * 1000ull) /* the pool stalled this long: drops */
#define WRITER_WAIT_NS      (100 * 1000 * 1000ull) /* drop mode: waits this long for the writer */
#define GROW_WAIT_NS        (2 * 1000 * 1000ull) /* a thread waits this long for the pool to grow, ... */
#define GROW_WAITS          10                   /* ... this many times, before it gives up */

struct block_wait {
    uint64_t since;  /* the first wait, CLOCK_MONOTONIC */
    uint64_t moved;  /* when the pool last moved (at__writer_pool_moves), CLOCK_MONOTONIC */
    uint32_t moves;  /* at__writer_pool_moves() then */
    uint32_t barren; /* for at__takeback_ask */
};

/* Whether to wait (again) for a block, and how long this time (*wait_ns): in block mode until
 * the trace ends; in the others while the writer can take back other threads' blocks
 * (takeback.c), and in overwrite mode while the writer can still grow the pool, until the pool
 * has not moved (no block freed or added) for 5 s: the writer may be slow to come (starved of
 * the CPU, growing the pool), but not forever. It is the pool's stall that counts, not this
 * thread's wait: with more threads than blocks, a thread may lose the race for the blocks
 * freed many times over while the others record (200 threads on 16 blocks: the last ones wait
 * most of the run). Else, in drop mode, WRITER_WAIT_NS before the first event it drops. Overwrite
 * mode loses the oldest events, not the newest, so a pool short only because the writer has not
 * grown it yet is waited for. Drop mode waits for the writer at all because a thread that drops at
 * once goes on using the core the writer needs: 64 threads sending as fast as they can on 2 cores
 * dropped 19% to 86% of their events, where waiting for the writer lost none, in about the same
 * time. Once dropping, a thread drops without waiting until a block is free again (dropping()). */
static int may_wait(struct block_wait *wait, uint64_t *wait_ns)
{
    int wake = 0;
    int can_take_back = at__takeback_ask(&wait->barren, &wake);
    if (wake)
        at__writer_wake();
    *wait_ns = TAKEBACK_WAIT_NS;
    if (at__config.mode == AT_MODE_BLOCK)
        /* acquire: pairs with at__finish's CAS to OFF, which ends the wait */
        return __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
    uint64_t now = at__clock_ns(CLOCK_MONOTONIC);
    uint32_t moves = at__writer_pool_moves();
    if (wait->since == 0)
        wait->since = now;
    if (wait->moved == 0 || moves != wait->moves) {
        wait->moved = now;
        wait->moves = moves;
    }
    uint64_t waited = now - wait->since;
    uint64_t stalled = now - wait->moved;
    uint64_t give_up_ns = at__test_limit_ns("ACTORTRACE_TEST_GIVE_UP_MS", TAKEBACK_GIVE_UP_NS);
    if (can_take_back)
        return stalled < give_up_ns;
    if (at__config.mode == AT_MODE_OVERWRITE && at__ring_can_grow())
        return stalled < give_up_ns &&
               /* acquire: pairs with at__finish's CAS to OFF: a stopped writer grows nothing */
               __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
    if (at__config.mode != AT_MODE_DROP || waited >= WRITER_WAIT_NS)
        return 0;
    if (WRITER_WAIT_NS - waited < *wait_ns)
        *wait_ns = WRITER_WAIT_NS - waited;
    /* acquire: pairs with at__finish's CAS to OFF, which ends the wait */
    return __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
}

/* A free block; when none is free but the pool can grow, the writer is asked for more (one
 * wake-up for all the threads asking) and waited for, GROW_WAITS times at most. */
static struct at_ring_block *take_or_grow(uint32_t tid, uint32_t seq)
{
    struct at_ring_block *block = at__ring_take(tid, seq);
    /* acquire: pairs with at__finish's CAS to OFF, which ends the wait */
    for (int i = 0; !block && i < GROW_WAITS && at__ring_can_grow() &&
                    __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
         i++) {
        if (at__ring_ask_grow())
            at__writer_wake();
        at__writer_wait_free(GROW_WAIT_NS);
        block = at__ring_take(tid, seq);
    }
    return block;
}

/* Overwrite mode: takes back the oldest FULL block (not in a handler: that takes a lock). */
static struct at_ring_block *overwrite_oldest(struct at_thread_state *self, uint32_t seq)
{
    struct at_lost lost;
    struct at_ring_block *block = NULL;
    for (int tries = 0; !block && !self->in_signal && tries < 8; tries++) {
        block = take_or_grow(self->tid, seq);
        if (!block && (block = at__ring_steal_oldest(self->tid, seq, &lost)) && lost.count)
            note_overwritten(&lost);
    }
    return block;
}

static struct at_ring_block *take_now(struct at_thread_state *self, uint32_t seq)
{
    struct at_ring_block *block = take_or_grow(self->tid, seq);
    if (!block && at__config.mode == AT_MODE_OVERWRITE)
        block = overwrite_oldest(self, seq);
    return block;
}

/* A free block, or in overwrite mode the oldest filled one; failing that, waits for one: in
 * block mode until the trace ends, in the others while the writer can take back idle threads'
 * blocks. The writer never waits for a lock a program thread holds, so a signal handler may
 * wait too. */
static struct at_ring_block *take_block(struct at_thread_state *self)
{
    /* One number for the whole process, not per thread: the kernel reuses thread ids, and a
     * later thread with the same id must sort after the earlier one. */
    uint32_t seq = __atomic_fetch_add(&block_seq, 1, __ATOMIC_RELAXED); /* unique, no order */
    struct at_ring_block *block = take_now(self, seq);
    struct block_wait wait = {.barren = AT_TAKEBACK_FIRST};
    uint64_t wait_ns;
    while (!block && may_wait(&wait, &wait_ns)) {
        at__writer_wait_free(wait_ns);
        block = take_now(self, seq);
    }
    return block;
}

/* glibc keeps the values of the first 32 keys in the thread's descriptor: setting one is a
 * store, where a later key's may allocate. */
#define KEYS_IN_DESCRIPTOR 32

/* Whether the thread may take blocks. Its first one (or its first after its exit destructor)
 * sets the thread-exit key, which in a signal handler must not allocate. */
static int thread_ready(struct at_thread_state *self)
{
    if (self->tid && self->exit_hook)
        return 1;
    if (self->in_signal && exit_key >= KEYS_IN_DESCRIPTOR)
        return 0;
    first_event(self);
    return 1;
}

/* Gives the thread a new current block: the spare if a nested call started one (its events
 * come next), else a free one. The outermost call only, with signals blocked. */
static int switch_block(struct at_thread_state *self)
{
    if (self->block)
        hand_over(self);
    if (!thread_ready(self))
        return 0;
    struct at_ring_block *block = self->spare;
    uint32_t next = self->spare_next;
    self->spare = NULL;
    if (!block) {
        block = take_block(self);
        next = 0;
    }
    if (!block)
        return 0;
    note_drops(self);
    self->block = block;
    self->pub->slots = at__block_slots(block);
    set_room(self, next < block->capacity ? next : block->capacity, block->capacity);
    at__takeback_publish(self, block);
    return 1;
}

/* Blocks every signal on this thread, keeping the mask to restore in *old. */
static void signals_off(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
}

static int switch_blocked(struct at_thread_state *self)
{
    sigset_t old;
    signals_off(&old);
    int switched = switch_block(self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return switched;
}

/* A new spare block in place of `seen`, the spare the caller found missing or full; the full
 * one goes to the writer first (spare_busy == 0: no interrupted call holds a slot of it).
 * Signals blocked: a handler in this one would take a second one. A handler that ran before
 * they were blocked may have replaced `seen` already (and recorded into the new spare): then
 * that spare stays. seen_seq: seen's number then, in case its block came back as a spare.
 * The call may be the thread's first (a handler interrupting the thread's first recording
 * call, or one after its exit destructor): the thread is made ready here, signals blocked. */
static void new_spare(struct at_thread_state *self, struct at_ring_block *seen, uint32_t seen_seq)
{
    sigset_t old;
    signals_off(&old);
    if (self->spare == seen && (!seen || seen->seq == seen_seq) && thread_ready(self)) {
        if (seen)
            at__writer_submit(seen, seen->capacity);
        self->spare = take_block(self);
        self->spare_next = 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A nested call found the block full (the call it interrupted may hold a slot of it, so the
 * block stays): the event goes into the spare block. Blocks are ordered by their number, so a
 * full spare may be handed over before the current block. */
static int record_spare(struct at_thread_state *self, unsigned kind, uint64_t actor, uint64_t peer,
                        uint64_t msg, uint32_t name, unsigned path)
{
    struct at_ring_block *spare = self->spare;
    int full = spare && self->spare_next >= spare->capacity;
    if (!spare || (full && self->spare_busy == 0))
        new_spare(self, spare, spare ? spare->seq : 0);
    /* busy from before the slot is taken until it is committed (as nest in at_record); the
     * spare is read after: a handler may have replaced it until then, none can from now */
    __asm__ volatile("incl %0" : "+m"(self->spare_busy)::"memory");
    spare = self->spare;
    int recorded = 0;
    if (spare) {
        uint32_t slot = 1;
        __asm__ volatile("xaddl %0, %1" : "+r"(slot), "+m"(self->spare_next));
        recorded = slot < spare->capacity;
        if (recorded)
            at__fill(&at__block_slots(spare)[slot], kind, actor, peer, msg, name, path);
    }
    __asm__ volatile("decl %0" : "+m"(self->spare_busy)::"memory");
    return recorded;
}

/* Drop mode, while no block is free: the event is counted and nothing else is tried (one
 * load of the pool's free count, no system call, errno untouched), so that a dropped event
 * costs little and the dropping threads leave the cores to the writer. */
static int dropping(const struct at_thread_state *self)
{
    return self->block == NULL && self->drop_count && at__config.mode == AT_MODE_DROP &&
           /* relaxed: a hint; a block freed meanwhile is seen at a later event */
           __atomic_load_n(&at__ring.free_count, __ATOMIC_RELAXED) == 0 &&
           /* relaxed: only to stop counting drops once the trace has ended */
           __atomic_load_n(&at__state, __ATOMIC_RELAXED) == AT_STATE_RUNNING;
}

/* The calling thread's private state, pointing to its at__self (the writer reaches the
 * thread's public part through it, takeback.c). */
static struct at_thread_state *thread_self(void)
{
    struct at_thread_state *self = &at__thread;
    self->pub = &at__self;
    return self;
}

int at__record_skips(void)
{
    struct at_thread_state *self = &at__thread;
    if (self->internal)
        return 1; /* capacity stays 0, so every event of this thread comes here */
    if (!dropping(self))
        return 0;
    drop(self);
    return 1;
}

/* The outermost call retries in the new block through at_record, as any caller: at nest 2
 * (its own count is still up), so a block a signal handler filled meanwhile sends the retry to
 * the spare, as a nested call; that is safe, only more careful than needed, since the
 * outermost call holds no slot once its block is handed over. */
void at__record_event(int state, unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg,
                      uint32_t name, unsigned path)
{
    struct at_thread_state *self = thread_self();
    if (state != AT_STATE_RUNNING) {
        set_room(self, 0, 0); /* after a stop: the block will not be written, keep out of it */
        if (state != AT_STATE_OFF)
            drop(self);
    } else if (self->pub->nest > 1) {
        if (!record_spare(self, kind, actor, peer, msg, name, path))
            drop(self);
    } else if (switch_blocked(self)) {
        at_record(kind, actor, peer, msg, name, path);
    } else {
        drop(self);
    }
}

/* The pthread key destructor: the thread is ending, so its partial blocks go to the writer. */
static void thread_exit(void *unused)
{
    (void)unused;
    struct at_thread_state *self = thread_self();
    sigset_t old;
    signals_off(&old);
    self->exit_hook = 0;
    self->exiting = 1;
    at__takeback_remove(self); /* first: the writer takes nothing back from here on */
    /* acquire: pairs with lifecycle.c's release store of RUNNING */
    if (__atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING) {
        if (self->block)
            hand_over(self);
        struct at_ring_block *spare = self->spare;
        if (spare)
            at__writer_submit(spare, self->spare_next < spare->capacity ? self->spare_next
                                                                        : spare->capacity);
        self->spare = NULL;
        note_drops(self);
        at__meta_thread_exit(self->tid, at__rdtsc());
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* In a child after fork: the forking thread's block belongs to the parent. The child's one
 * thread starts again with no block, keeping only what its stack, a copy, goes on with: the
 * current actor, the shim depth, the signal handlers and steps it runs in (the fork may have
 * been called from inside a handler or a step). */
void at__record_after_fork(void)
{
    struct at_thread kept = at__self;
    uint32_t in_signal = at__thread.in_signal;
    memset(&at__self, 0, sizeof at__self);
    memset(&at__thread, 0, sizeof at__thread);
    at__self.current_actor = kept.current_actor;
    at__self.depth = kept.depth;
    at__self.depth_sp = kept.depth_sp;
    at__self.frames = kept.frames;
    at__thread.in_signal = in_signal;
    at__losses_after_fork();
    at__takeback_after_fork();
}

int at__record_init(void)
{
    return -pthread_key_create(&exit_key, thread_exit);
}
