/* Taking back the blocks of idle threads, so that the tracer works with more live threads than
 * the ring has blocks (512 at the default settings; every CZMQ actor is a thread).
 *
 * Each thread that holds blocks is in a registry (added by the slow path when the thread takes
 * its first block, removed when it ends). When a thread asks because it found no free block,
 * the writer looks at every registered thread: one whose block has not moved for IDLE_NS is
 * idle, and its block is taken back (and, when nobody is idle, those that have not moved for
 * the longest, one per ask). For each such thread:
 *
 *  1. the writer stores 0 in its `capacity` (4 bytes: `next`, which the thread's xadd may be
 *     updating, is never written), so that every later at_record call goes to the slow path;
 *  2. one membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) for the whole batch: each thread of the
 *     process runs a full barrier at some point P during the call (or is not running, which
 *     is as good). A call whose `incl nest` is after P loads capacity after P, sees 0 and takes
 *     no slot. A call whose `incl` is before P has made nest non-zero where the writer's load
 *     after the barrier sees it, until its `decl`, which comes after its commit: so
 *  3. reading `nest == 0` after the barrier means no call of that thread is between loading
 *     capacity and committing, and every slot below `next` taken before P is committed.
 *  4. Ownership is settled on the thread's `held` word (the block's ticket: its number and
 *     index, never the same twice): the writer clears it with a compare-exchange against the
 *     ticket it saw idle, the thread's slow path with an exchange when it hands the block
 *     over (at__takeback_claim). Whoever gets the ticket owns the block. The thread
 *     publishes `held` only after opening the room (release), so a writer that saw the
 *     ticket stores its 0 after that, and the thread never opens the room of that block again.
 *
 * The pass hands the blocks it took back to the writer, which writes them at once, in every
 * mode: in overwrite mode it would
 * otherwise be the first to be overwritten while holding few events (for the same reason,
 * blocks handed over partly filled, by threads that ended, are written when a thread asks).
 * A thread that finds no free block waits for a take-back only in a process that has had live
 * threads at least half as many as the blocks: otherwise the pool is short because the writer
 * is behind, and drop mode drops as it always did. The thread, at its next
 * call, finds its ticket gone (or capacity 0 on a block still its own, when nest was not 0:
 * it hands that over as partly filled) and takes a new block. Spare blocks (nested signal
 * handlers) are not taken back: a thread takes one only when its block is full inside a
 * handler, and makes it current at its next switch.
 *
 * The registry's mutex is taken by the slow path (never in a signal handler), thread exit and
 * the writer, which only tries it: the finish never waits for it. Without membarrier (a
 * seccomp filter, an old kernel) nothing is taken back, as said once on stderr. */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meta.h"
#include "takeback.h"

#define IDLE_NS (20 * 1000 * 1000ull) /* unmoved this long, a thread's block is taken back */
#define BATCH   16 /* at least this many busy threads' blocks for waiting threads in a pass */

struct entry {
    struct at_thread_state *thread;
    uint64_t ticket;   /* `held` at the last look */
    uint32_t next;     /* `next` at the last look */
    uint32_t chosen;   /* to be taken back in this pass */
    uint64_t since_ns; /* when ticket or next last changed */
};

static struct {
    pthread_mutex_t lock; /* guards the entries and each thread's registry_slot */
    struct entry *entries;
    uint32_t count, cap;
    uint32_t peak;   /* the most threads registered at once; written under the lock, read as a
                      * hint without it */
    int enabled;     /* membarrier works here: 1, refused: -1, not known yet: 0 (the writer
                      * registers at the first ask: that may wait for a grace period) */
    uint32_t wanted; /* asks since the last pass (threads that found no free block); atomic */
    uint32_t barren; /* passes asked for that found no block to take back; atomic */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* membarrier(2) by the syscall instruction, like at__futex: a shim may wrap syscall(). */
static long membarrier(int cmd)
{
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(324L /* SYS_membarrier on x86-64 */), "D"((long)cmd), "S"(0L), "d"(0L)
                     : "rcx", "r11", "memory");
    return ret;
}

/* The writer, at the first ask (registering may wait for an RCU grace period, which no
 * process with few threads should pay for, and no start-up). */
static void start(void)
{
    long err = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
    if (err < 0)
        at__warn("membarrier is refused (%s): the blocks of idle threads cannot be taken "
                 "back, so more live threads than blocks lose events",
                 strerror((int)-err));
    /* release: pairs with at__takeback_ask's acquire load; set once per process image */
    __atomic_store_n(&reg.enabled, err < 0 ? -1 : 1, __ATOMIC_RELEASE);
}

/* A block's ticket: its number and index, never 0 and never the same twice (numbers are
 * unique), so a compare-exchange against it cannot mistake a block taken again for the old. */
static uint64_t ticket_of(struct at_ring_block *block)
{
    uint64_t index = (uint64_t)((char *)block - at__ring.base) / at__ring.block_size;
    return (uint64_t)block->seq << 32 | (index + 1);
}

uint32_t at__block_committed(struct at_ring_block *block, uint32_t taken)
{
    uint32_t used = taken < block->capacity ? taken : block->capacity;
    const struct at_event *slots = at__block_slots(block);
    /* acquire: pairs with at__fill's release commit. Slots taken after the room was closed
     * (capacity 0) were never written; they can only follow the committed ones. */
    while (used > 0 && __atomic_load_n(&slots[used - 1].kind, __ATOMIC_ACQUIRE) == 0)
        used--;
    return used;
}

void at__takeback_publish(struct at_thread_state *self, struct at_ring_block *block)
{
    /* release: the writer that sees the ticket (choose_idle, acquire) stores its capacity 0
     * after the room the thread set before this */
    __atomic_store_n(&self->held, ticket_of(block), __ATOMIC_RELEASE);
}

int at__takeback_claim(struct at_thread_state *self)
{
    /* acq_rel: pairs with settle's compare-exchange: whoever clears held owns the block */
    return __atomic_exchange_n(&self->held, 0, __ATOMIC_ACQ_REL) != 0;
}

int at__takeback_register(struct at_thread_state *self, int may_allocate)
{
    pthread_mutex_lock(&reg.lock);
    int err = 0;
    if (reg.count == reg.cap && !may_allocate) {
        err = -EAGAIN;
    } else if (reg.count == reg.cap) {
        uint32_t cap = reg.cap ? reg.cap * 2 : 64;
        struct entry *entries = realloc(reg.entries, cap * sizeof *entries);
        if (entries) {
            reg.entries = entries;
            reg.cap = cap;
        } else {
            err = -ENOMEM; /* the thread works on; its block is never taken back */
        }
    }
    if (err == 0) {
        reg.entries[reg.count] = (struct entry){.thread = self};
        self->registry_slot = ++reg.count;
        if (reg.count > reg.peak) /* relaxed: at__takeback_ask reads it without the lock */
            __atomic_store_n(&reg.peak, reg.count, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&reg.lock);
    return err;
}

void at__takeback_remove(struct at_thread_state *self)
{
    pthread_mutex_lock(&reg.lock);
    uint32_t slot = self->registry_slot;
    if (slot) {
        reg.entries[slot - 1] = reg.entries[--reg.count];
        if (slot - 1 < reg.count)
            reg.entries[slot - 1].thread->registry_slot = slot;
        self->registry_slot = 0;
    }
    pthread_mutex_unlock(&reg.lock);
}

int at__takeback_ask(uint32_t *barren, int *wake_writer)
{
    /* acquire: pairs with start's release store (while not known, wait) */
    if (__atomic_load_n(&reg.enabled, __ATOMIC_ACQUIRE) < 0)
        return 0;
    /* relaxed, both: a hint. Never as many live threads as half the blocks: the pool is short
     * because the writer is behind, which taking back does not help (drop mode drops). With
     * that many once, blocks may be in threads' hands, or in the partly filled blocks of the
     * many that ended, which the writer frees soon. */
    if (__atomic_load_n(&reg.peak, __ATOMIC_RELAXED) * 2 <
        __atomic_load_n(&at__ring.block_max, __ATOMIC_RELAXED))
        return 0;
    /* acquire: pairs with the writer's release increment in at__takeback_pass */
    uint32_t now = __atomic_load_n(&reg.barren, __ATOMIC_ACQUIRE);
    if (*barren == AT_TAKEBACK_FIRST)
        *barren = now;
    else if (*barren != now)
        return 0; /* a pass since the first ask found nothing to take back */
    /* acq_rel: pairs with the writer's exchange in takeback_pass; one wake for many asking */
    *wake_writer = __atomic_fetch_add(&reg.wanted, 1, __ATOMIC_ACQ_REL) == 0;
    return 1;
}

/* Notes where each thread's block stands and marks the idle ones. Returns how many. */
static uint32_t choose_idle(uint64_t now)
{
    uint32_t chosen = 0;
    for (uint32_t i = 0; i < reg.count; i++) {
        struct entry *e = &reg.entries[i];
        /* acquire: pairs with at__takeback_publish's release store, after the room is set */
        uint64_t ticket = __atomic_load_n(&e->thread->held, __ATOMIC_ACQUIRE);
        /* relaxed: only to see whether the thread moved; the thread updates it with xadd */
        uint32_t next = __atomic_load_n(&e->thread->pub->next, __ATOMIC_RELAXED);
        if (ticket != e->ticket || next != e->next || ticket == 0)
            *e = (struct entry){
                .thread = e->thread, .ticket = ticket, .next = next, .since_ns = now};
        e->chosen = e->ticket && now - e->since_ns >= IDLE_NS;
        chosen += e->chosen;
    }
    return chosen;
}

/* Threads wait and nobody is idle: the blocks that have not moved for longest (and not since
 * the last look), one per ask and at least BATCH. Returns how many it marked. */
static uint32_t choose_unmoved(uint64_t now, uint32_t wanted)
{
    uint32_t chosen = 0, want = wanted > BATCH ? wanted : BATCH;
    for (; chosen < want; chosen++) {
        struct entry *oldest = NULL;
        for (uint32_t i = 0; i < reg.count; i++) {
            struct entry *e = &reg.entries[i];
            if (e->ticket && !e->chosen && e->since_ns < now &&
                (!oldest || e->since_ns < oldest->since_ns))
                oldest = e;
        }
        if (!oldest)
            break;
        oldest->chosen = 1;
    }
    return chosen;
}

/* Whether waiting for a block may still help: a registered thread holds one (a later look
 * may find it unmoved), or one is handed over and is about to be written and freed. */
static int blocks_to_come(void)
{
    for (uint32_t i = 0; i < reg.count; i++)
        if (reg.entries[i].ticket)
            return 1;
    /* acquire: pairs with ring.c's release store of block_count */
    uint32_t count = __atomic_load_n(&at__ring.block_count, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < count; i++)
        /* relaxed: a hint; the writer itself moves FULL blocks on */
        if (__atomic_load_n(&at__ring_block(i)->state, __ATOMIC_RELAXED) == AT_BLOCK_FULL)
            return 1;
    return 0;
}

#ifdef AT_TEST_TAKEBACK_PAUSE
/* The test copy: the thread whose block was just taken back has time to record meanwhile. */
static void test_pause(void)
{
    struct timespec pause = {0, 200 * 1000};
    nanosleep(&pause, NULL);
}
#else
static void test_pause(void)
{
}
#endif

/* The blocks a pass took back, for the writer to write and free (at__takeback_pass). */
struct taken {
    struct at_ring_block **blocks;
    uint32_t count, max;
};

static void hand_to_writer(struct taken *taken, struct at_ring_block *block, uint32_t used)
{
    block->used = used;
    taken->blocks[taken->count++] = block;
}

/* Step 4 for one thread, after the barrier: the block is the writer's if the thread is in no
 * at_record call and still holds the ticket. Returns 1 when it was taken back. */
static int settle(struct entry *e, struct taken *taken)
{
    struct at_thread_state *t = e->thread;
    /* relaxed: ordered after the barrier by the membarrier call itself (see the top) */
    if (__atomic_load_n(&t->pub->nest, __ATOMIC_RELAXED) != 0 || taken->count == taken->max)
        return 0;
    /* Read before the block is ours, not after: once the thread finds it gone (at its next
     * call) it closes its room, and then records into a new block, and `next` counts that
     * block's slots. Now it counts every slot taken before the barrier, all committed, and
     * perhaps some taken since, never written (capacity 0). Relaxed: ordered after the barrier
     * by the membarrier call, and before the compare-exchange, a full barrier. */
    uint32_t slots = __atomic_load_n(&t->pub->next, __ATOMIC_RELAXED);
    uint64_t ticket = e->ticket;
    /* acq_rel: pairs with at__takeback_claim's exchange of held: one of the two gets it */
    if (!__atomic_compare_exchange_n(&t->held, &ticket, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    test_pause();
    struct at_ring_block *block = at__ring_block((uint32_t)e->ticket - 1);
    hand_to_writer(taken, block, at__block_committed(block, slots));
    e->ticket = 0;
    return 1;
}

/* Steps 1 to 4 for the chosen threads. Returns the blocks taken back. */
static uint32_t take_chosen(struct taken *taken)
{
    for (uint32_t i = 0; i < reg.count; i++)
        if (reg.entries[i].chosen)
            /* relaxed: what orders it is the membarrier that follows */
            __atomic_store_n(&reg.entries[i].thread->pub->capacity, 0, __ATOMIC_RELAXED);
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) < 0)
        return 0; /* capacity 0 only sends those threads to the slow path: they hand over */
    uint32_t count = 0;
    for (uint32_t i = 0; i < reg.count; i++)
        if (reg.entries[i].chosen)
            count += settle(&reg.entries[i], taken);
    return count;
}

/* Overwrite mode: the blocks handed over partly filled (a thread ended) are written, not
 * kept: they would take the pool's room for few events, and are never overwritten
 * (at__ring_steal_oldest takes only filled ones). Each is claimed first, FULL to WRITING, as
 * the writer claims every block it writes: a thread may take a FULL block over at any moment,
 * and one that looked FULL here and had its count cleared by such a take-over was written and
 * freed while its new owner filled it, whose events were then lost uncounted. Returns the
 * blocks freed. */
static uint32_t write_partial(struct taken *taken)
{
    uint32_t freed = 0;
    /* acquire: pairs with ring.c's release store of block_count */
    uint32_t count = __atomic_load_n(&at__ring.block_count, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0;
         i < count && at__config.mode == AT_MODE_OVERWRITE && taken->count < taken->max; i++) {
        struct at_ring_block *block = at__ring_block(i);
        /* relaxed: hints, so that filled blocks are left alone; the claim below decides */
        if (__atomic_load_n(&block->state, __ATOMIC_RELAXED) != AT_BLOCK_FULL)
            continue;
        /* a test holds the writer here until a thread takes the block over */
        at__test_wait_change("ACTORTRACE_TEST_PARTIAL_WAIT_MS", &block->used, block->capacity);
        if (__atomic_load_n(&block->used, __ATOMIC_RELAXED) >= block->capacity)
            continue;
        uint32_t expected = AT_BLOCK_FULL;
        /* acquire: pairs with at__writer_submit's release store of FULL (and of used); against
         * at__ring_steal_oldest's compare-exchange: one of the two takes the block */
        if (!__atomic_compare_exchange_n(&block->state, &expected, AT_BLOCK_WRITING, 0,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        if (block->used < block->capacity) {
            hand_to_writer(taken, block, block->used);
            freed++;
        } else {
            /* taken over and handed back filled since the look above: kept. Release: pairs
             * with at__ring_steal_oldest's acquire compare-exchange */
            __atomic_store_n(&block->state, AT_BLOCK_FULL, __ATOMIC_RELEASE);
        }
    }
    return freed;
}

/* The threads' side: marks and takes back what is idle (or, for waiting threads, unmoved);
 * when nothing was freed and no block is to come, tells the waiting threads to stop. */
static void take_back(uint32_t wanted, uint32_t freed, struct taken *taken)
{
    uint64_t now = at__clock_ns(CLOCK_MONOTONIC);
    if (choose_idle(now) > 0 || choose_unmoved(now, wanted) > 0)
        freed += take_chosen(taken);
    if (freed == 0 && !blocks_to_come())
        /* release: pairs with at__takeback_ask's acquire load: waiting is in vain */
        __atomic_fetch_add(&reg.barren, 1, __ATOMIC_RELEASE);
}

uint32_t at__takeback_pass(struct at_ring_block **blocks, uint32_t max)
{
    struct taken taken = {.blocks = blocks, .max = max};
    /* on every pass, whether or not a thread waits: in a process whose threads come and go a
     * few at a time, none waits until the blocks the ended ones left fill the pool, and from
     * then on the pool keeps their few events and every new one is overwritten at once */
    uint32_t freed = write_partial(&taken);
    /* acq_rel: pairs with at__takeback_ask's fetch_add */
    uint32_t wanted = __atomic_exchange_n(&reg.wanted, 0, __ATOMIC_ACQ_REL);
    /* Nobody waits: no lock, no barrier. Taking a block back when the pool is short only
     * because the writer is behind would help nobody, and leave its idle owner to drop. */
    if (!wanted)
        return taken.count;
    /* relaxed: only the writer stores it */
    if (__atomic_load_n(&reg.enabled, __ATOMIC_RELAXED) == 0)
        start();
    if (__atomic_load_n(&reg.enabled, __ATOMIC_RELAXED) < 0) /* as above */
        return taken.count;
    /* a thread waiting asks again (and wakes the writer) if the lock is busy */
    if (pthread_mutex_trylock(&reg.lock) == 0) {
        take_back(wanted, freed, &taken);
        pthread_mutex_unlock(&reg.lock);
    }
    return taken.count;
}

void at__takeback_note_drops(void)
{
    struct timespec until = at__monotonic_after(100 * 1000 * 1000ull);
    if (pthread_mutex_clocklock(&reg.lock, CLOCK_MONOTONIC, &until) != 0)
        return;
    for (uint32_t i = 0; i < reg.count; i++) {
        struct at_thread_state *thread = reg.entries[i].thread;
        /* relaxed: tracing is off, so the thread no longer counts drops or notes them */
        uint64_t count = __atomic_exchange_n(&thread->drop_count, 0, __ATOMIC_RELAXED);
        if (count)
            at__meta_lost_nowait(thread->tid, AT_LOST_DROPPED, count, thread->drop_first_tsc,
                                 at__rdtsc());
    }
    pthread_mutex_unlock(&reg.lock);
}

/* In a forked child: the registered threads are the parent's; only the forking thread came
 * along, and it registers again with its first block. */
void at__takeback_after_fork(void)
{
    reg.count = reg.peak = 0;
    reg.enabled = 0; /* the child registers anew when a thread asks */
    reg.wanted = 0;
    pthread_mutex_init(&reg.lock, NULL);
}
