/* The block pool. All blocks live in one MAP_SHARED mapping of a file (in ACTORTRACE_RING_DIR,
 * /dev/shm by default), so events a thread has committed survive the process being killed:
 * the page cache keeps them and `tracedecode` recovers them from the file. A clean exit removes
 * the file. Where the file cannot be made, the pool is anonymous memory and only that recovery
 * is lost.
 *
 * The pool grows with use. Address space for ACTORTRACE_BUFFER_MB is mapped at start, but only
 * the first few blocks are backed (allocated in the file and faulted in): a process pays for
 * the memory it records into, and start-up costs the same whatever the buffer size. The writer
 * prepares more blocks (allocates them in the file, which is where a full tmpfs shows, and
 * faults them in) when it came late (at__ring_grow), so that neither a page fault nor SIGBUS
 * from a full tmpfs ever reaches a recording thread. A thread that finds no block ready while
 * the pool can still grow asks for more (at__ring_ask_grow); the slow path (record.c) wakes
 * the writer and waits for it, 20 ms at most, then goes on as with a full pool. This file
 * never calls the writer: it sits below it.
 *
 * Each block moves FREE -> FILLING (a thread took it, CAS) -> FULL (handed to the writer) ->
 * WRITING (the writer encodes it) -> FREE (slots cleared by the writer, so that a recording
 * thread never pays for clearing). Two more moves: FULL -> FILLING when overwrite mode steals
 * the oldest full block for a thread (at__ring_steal_oldest, CAS against the writer's claim),
 * and FILLING -> FULL when the writer takes a block back from an idle thread (takeback.c; the
 * writer then claims it for writing at once). free_count lets a thread see "nothing free" in
 * one load. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define FIRST_BLOCKS    4          /* ready at start */
#define GROW_STEP_BYTES (4u << 20) /* the most one step prepares, so waiters hear soon */
#define EAGER_BYTES     (2u << 20) /* up to this, grown whenever half the blocks are in use */

struct at_ring at__ring = {.fd = -1};
static uint64_t early_lost[4]; /* losses while the recorder was starting; atomic */

static int open_ring_file(void)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    uint64_t noise = at__rdtsc() ^ ((uint64_t)getpid() << 32);
    for (int attempt = 0; attempt < 16; attempt++, noise = noise * 6364136223846793005u + 1) {
        char suffix[7];
        for (int i = 0; i < 6; i++)
            suffix[i] = letters[(noise >> (8 * i + 3)) % (sizeof letters - 1)];
        suffix[6] = '\0';
        snprintf(at__ring.path, sizeof at__ring.path, "%s/actortrace-%d-%s.ring",
                 at__config.ring_dir, (int)getpid(), suffix);
        int fd = open(at__ring.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            break;
    }
    int err = errno;
    at__ring.path[0] = '\0'; /* not ours */
    return -err;
}

static size_t block_offset(uint32_t index)
{
    return sizeof(struct at_ring_header) + (size_t)index * at__ring.block_size;
}

static int is_ring_file(int fd)
{
    return at__fd_is(fd, at__ring.dev, at__ring.ino);
}

/* The ring file's descriptor, checked to be the ring file each time. The program may close
 * every descriptor it did not open and open files of its own meanwhile: ours is kept high up,
 * where those get no number, and once it is gone its number is never used or closed again (it
 * may be the program's now); the file is opened anew, by name, and the new descriptor moved
 * high at once. Opening it anew for each step and closing it after, the writer closed the
 * program's file when the program had reused the number in between. */
static int ring_fd(void)
{
    if (is_ring_file(at__ring.fd))
        return at__ring.fd;
    at__ring.fd = -1;
    int fd = open(at__ring.path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int high = at__high_fd(fd);
    if (high != fd)
        close(fd);
    if (!is_ring_file(high)) {
        close(high);
        return -ESTALE;
    }
    at__ring.fd = high;
    return high;
}

static int allocate(size_t offset, size_t len)
{
    int fd = ring_fd();
    if (fd < 0)
        return fd;
    if (at__ring.block_count > 0)
        /* the writer's steps, not the start's: threads find the pool short while it can still
         * grow, longer than they wait for it (record.c), and a program may close and reuse
         * descriptors meanwhile */
        at__test_delay("ACTORTRACE_TEST_GROW_DELAY_MS");
    int err = posix_fallocate(fd, (off_t)offset, (off_t)len);
    if (err == EBADF && (fd = ring_fd()) >= 0) /* closed by the program just now */
        err = posix_fallocate(fd, (off_t)offset, (off_t)len);
    return fd < 0 ? fd : -err;
}

/* Backs [offset, offset + len) of the mapping: allocated in the file (a full tmpfs says so
 * here, with an error, rather than later with SIGBUS) and faulted in, writable. */
static int back(size_t offset, size_t len)
{
    if (at__ring.path[0])
        AT_RETURN_IF_ERROR(allocate(offset, len));
    char *start = (char *)at__ring.header + offset;
    if (madvise(start, len, MADV_POPULATE_WRITE) == 0)
        return 0;
    /* before Linux 5.14: fault each page in by hand; the pages are zero, so is the store */
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < len; i += (size_t)page)
        /* relaxed: only to fault the page in; no other thread uses it yet */
        __atomic_store_n(start + i, 0, __ATOMIC_RELAXED);
    return 0;
}

/* Makes blocks [block_count, block_count + more) ready and adds them to the pool. Only one
 * thread at a time: the starting thread, then the writer. */
static int prepare(uint32_t more)
{
    uint32_t first = at__ring.block_count;
    AT_RETURN_IF_ERROR(back(block_offset(first), (size_t)more * at__ring.block_size));
    for (uint32_t i = first; i < first + more; i++)
        at__ring_block(i)->capacity = at__ring.capacity;
    /* release: a thread that sees the new count sees the blocks' capacity */
    __atomic_store_n(&at__ring.block_count, first + more, __ATOMIC_RELEASE);
    /* release: for a reader of the ring file (recovery), as above */
    __atomic_store_n(&at__ring.header->block_count, first + more, __ATOMIC_RELEASE);
    /* release: pairs with at__ring_take's acquire load of free_count */
    __atomic_fetch_add(&at__ring.free_count, more, __ATOMIC_RELEASE);
    return 0;
}

static void init_header(const char *trace_path)
{
    struct at_ring_header *h = at__ring.header;
    memcpy(h->magic, AT_RING_MAGIC, sizeof h->magic);
    h->block_size = at__ring.block_size;
    h->block_max = at__ring.block_max;
    h->pid = (uint32_t)getpid();
    h->start_ticks = at__start_ticks();
    snprintf(h->trace_path, sizeof h->trace_path, "%s", trace_path);
}

/* Maps address space for `size` bytes, of the ring file or (file_fd < 0) anonymous memory. */
static int map_ring(int file_fd, size_t size)
{
    int flags = file_fd >= 0 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS;
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, file_fd, 0);
    if (map == MAP_FAILED)
        return -errno;
    struct stat st;
    if (file_fd >= 0 && fstat(file_fd, &st) == 0) {
        at__ring.dev = st.st_dev;
        at__ring.ino = st.st_ino;
    }
    at__ring.header = map;
    at__ring.base = (char *)map + sizeof(struct at_ring_header);
    at__ring.map_size = size;
    return 0;
}

/* The header and the first blocks, in a mapping of size bytes (address space only). */
static int make_ring(int file_fd, size_t size, const char *trace_path)
{
    AT_RETURN_IF_ERROR(map_ring(file_fd, size));
    int err = back(0, sizeof(struct at_ring_header));
    if (err == 0) {
        init_header(trace_path);
        err = prepare(FIRST_BLOCKS);
    }
    if (err < 0) {
        munmap(at__ring.header, size);
        at__ring.header = NULL;
        at__ring.block_count = at__ring.free_count = 0;
    }
    return err;
}

int at__ring_create(const char *trace_path)
{
    uint32_t block_size = at__config.block_kb * 1024u;
    uint64_t blocks = (uint64_t)at__config.buffer_mb * 1024u / at__config.block_kb;
    if (blocks < FIRST_BLOCKS) {
        at__warn("ACTORTRACE_BUFFER_MB holds fewer than 4 blocks of ACTORTRACE_BLOCK_KB; "
                 "using 4 blocks");
        blocks = FIRST_BLOCKS;
    }
    at__ring.block_size = block_size;
    at__ring.block_max = (uint32_t)blocks;
    at__ring.capacity = (block_size - sizeof(struct at_ring_block)) / sizeof(struct at_event);
    size_t size = sizeof(struct at_ring_header) + (size_t)blocks * block_size;
    int fd = open_ring_file();
    if (fd >= 0) {
        at__ring.fd = at__high_fd(fd);
        if (at__ring.fd != fd)
            close(fd);
    }
    int err = fd >= 0 ? make_ring(at__ring.fd, size, trace_path) : fd;
    if (err < 0) {
        if (at__ring.fd >= 0)
            close(at__ring.fd);
        at__ring.fd = -1;
        at__warn("cannot create a ring file in %s (%s); events will not survive a SIGKILL",
                 at__config.ring_dir, strerror(-err));
        at__ring_remove();
        err = make_ring(-1, size, trace_path);
    }
    return err;
}

/* Called at a clean end: every block is in the trace, so the file has nothing to recover. The
 * mapping stays, since threads still running may record into it until the process ends. The
 * thread finishing the trace and one waiting for it may both come here (lifecycle.c), and the
 * second may end the process as soon as this returns: each unlinks (the path is cleared only
 * after an unlink, so a caller that finds it cleared finds the file gone), one closes. */
void at__ring_remove(void)
{
    /* relaxed: a cleared path means only that an unlink returned before */
    if (__atomic_load_n(&at__ring.path[0], __ATOMIC_RELAXED))
        unlink(at__ring.path);
    if (__atomic_exchange_n(&at__ring.removed, 1, __ATOMIC_ACQ_REL))
        return;
    if (is_ring_file(at__ring.fd))
        close(at__ring.fd);
    at__ring.fd = -1;
    __atomic_store_n(&at__ring.path[0], '\0', __ATOMIC_RELAXED);
}

int at__ring_can_grow(void)
{
    /* acquire: pairs with prepare's release store; block_max: relaxed, lowered only */
    return __atomic_load_n(&at__ring.block_count, __ATOMIC_ACQUIRE) <
           __atomic_load_n(&at__ring.block_max, __ATOMIC_RELAXED);
}

uint32_t at__ring_free(void)
{
    /* acquire: pairs with at__ring_release's increment (a heuristic: at__ring_grow) */
    return __atomic_load_n(&at__ring.free_count, __ATOMIC_ACQUIRE);
}

/* The writer's part, once a pass, after it wrote what was FULL: prepares one step of blocks
 * when the writer came late, judged by the blocks free at the start of the pass: while the
 * ring is under EAGER_BYTES, fewer than half free or a thread asking, which gives a program
 * slack against a writer kept from running (a loaded machine, a slow disk); past it, fewer
 * than a quarter. Not half always: the writer is woken when half the blocks are in use, so
 * that is what it finds at every wake-up, and growing then doubled the ring at each one.
 * One step a pass, not until enough are free, and never on the pass right after a step
 * unless a thread asked: a step of 4 MiB takes the writer about 2 ms, in which a thread
 * recording as fast as it can fills more than that, so growing until a quarter was free took
 * the ring to its largest on the nop_send loop, and making its pages was a third of what the
 * writer cost there. Lateness a step caused is not the program's. Returns the number
 * prepared. */
uint32_t at__ring_grow(uint32_t free_seen)
{
    static int grew_last_pass;
    uint32_t count = at__ring.block_count;
    int eager = (uint64_t)count * at__ring.block_size < EAGER_BYTES;
    /* acq_rel: pairs with at__ring_ask_grow's exchange, one ask per wake-up */
    int asked = __atomic_exchange_n(&at__ring.grow_wanted, 0, __ATOMIC_ACQ_REL);
    int late = eager ? asked || free_seen < count / 2
                     : free_seen < count / 4 && (asked || !grew_last_pass);
    grew_last_pass = 0;
    if (count >= at__ring.block_max || !late)
        return 0;
    grew_last_pass = 1;
    uint32_t step = GROW_STEP_BYTES / at__ring.block_size;
    uint32_t more = count < at__ring.block_max - count ? count : at__ring.block_max - count;
    if (step < more)
        more = step > 0 ? step : 1;
    int err = prepare(more);
    if (err < 0) {
        at__warn("the ring file cannot grow past %u blocks (%s); events that do not fit are "
                 "counted as lost",
                 count, strerror(-err));
        /* relaxed: can_grow reads it as a hint; block_count is what publishes blocks */
        __atomic_store_n(&at__ring.block_max, count, __ATOMIC_RELAXED);
        return 0;
    }
    return more;
}

/* Until the recorder runs, the ring may not be there yet, or be unmapped again if the start
 * fails: the count waits in early_lost. */
void at__ring_count_lost(unsigned reason, uint64_t count)
{
    /* acquire: pairs with lifecycle.c's release store of RUNNING, after the ring is made */
    int running = __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
    /* relaxed: counts, read at the end (or by recovery from the file) */
    __atomic_fetch_add(running ? &at__ring.header->lost[reason & 3] : &early_lost[reason & 3],
                       count, __ATOMIC_RELAXED);
}

uint64_t at__ring_lost_total(void)
{
    uint64_t total = 0;
    for (unsigned i = 1; i < 4; i++) {
        /* relaxed: counts added with relaxed increments (at__ring_count_lost) */
        total += __atomic_load_n(&early_lost[i], __ATOMIC_RELAXED);
        if (at__ring.header)
            total += __atomic_load_n(&at__ring.header->lost[i], __ATOMIC_RELAXED);
    }
    return total;
}

/* Keeps the first clock sample and the latest in the header, for recovery after a kill. */
void at__ring_note_clock(uint64_t tsc, uint64_t mono_ns, uint64_t real_ns)
{
    struct at_ring_header *h = at__ring.header;
    if (h)
        h->clock[h->clock[0].tsc != 0] = (struct at_ring_clock){tsc, mono_ns, real_ns};
}

struct at_ring_block *at__ring_block(uint32_t index)
{
    return (struct at_ring_block *)(at__ring.base + (size_t)index * at__ring.block_size);
}

struct at_ring_block *at__ring_take(uint32_t tid, uint32_t seq)
{
    /* acquire: pairs with at__ring_release's and prepare's release increments */
    if (__atomic_load_n(&at__ring.free_count, __ATOMIC_ACQUIRE) == 0)
        return NULL;
    /* block_count: acquire, pairs with prepare's release store (the blocks' capacity is
     * set); hint: relaxed, it only spreads the searches */
    uint32_t count = __atomic_load_n(&at__ring.block_count, __ATOMIC_ACQUIRE);
    uint32_t start = __atomic_fetch_add(&at__ring.hint, 1, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < count; i++) {
        struct at_ring_block *block = at__ring_block((start + i) % count);
        uint32_t expected = AT_BLOCK_FREE;
        /* relaxed: a hint before the CAS below, which is what takes the block */
        if (__atomic_load_n(&block->state, __ATOMIC_RELAXED) != AT_BLOCK_FREE)
            continue;
        /* acquire: the writer's clearing of the slots happens before our stores into them */
        if (__atomic_compare_exchange_n(&block->state, &expected, AT_BLOCK_FILLING, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            /* relaxed: the CAS above owns the block; the count is a hint for "none free" */
            __atomic_fetch_sub(&at__ring.free_count, 1, __ATOMIC_RELAXED);
            block->tid = tid;
            block->seq = seq;
            block->used = 0;
            return block;
        }
    }
    return NULL;
}

int at__ring_ask_grow(void)
{
    /* acq_rel: pairs with at__ring_grow's exchange: one wake-up for all the threads asking */
    return __atomic_exchange_n(&at__ring.grow_wanted, 1, __ATOMIC_ACQ_REL) == 0;
}

#ifdef AT_TEST_HOOKS
/* The test copies only: ACTORTRACE_TEST_KILL_AT_STEAL=N kills the process at its Nth overwrite,
 * once the stolen block's events are gone from the ring, so that a test can check they were
 * counted as lost by then. */
static void test_kill_at_steal(void)
{
    static long left = -1; /* steals before the kill; atomic, relaxed */
    if (__atomic_load_n(&left, __ATOMIC_RELAXED) < 0) {
        const char *v = getenv("ACTORTRACE_TEST_KILL_AT_STEAL");
        __atomic_store_n(&left, v ? atol(v) : 0, __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&left, __ATOMIC_RELAXED) > 0 &&
        __atomic_sub_fetch(&left, 1, __ATOMIC_RELAXED) == 0)
        raise(SIGKILL);
}
#else
static void test_kill_at_steal(void)
{
}
#endif

/* Overwrite mode: the oldest filled FULL block (smallest seq) is taken back for thread tid. Its
 * committed events, whose count and time range go into *lost, are discarded, and counted in
 * the ring file as overwritten. */
struct at_ring_block *at__ring_steal_oldest(uint32_t tid, uint32_t seq, struct at_lost *lost)
{
    struct at_ring_block *oldest = NULL;
    /* acquire: pairs with prepare's release store of block_count */
    uint32_t count = __atomic_load_n(&at__ring.block_count, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < count; i++) {
        struct at_ring_block *block = at__ring_block(i);
        /* a partly filled block is the writer's to write (takeback.c), not to overwrite */
        if (__atomic_load_n(&block->state, __ATOMIC_ACQUIRE) == AT_BLOCK_FULL &&
            block->used == block->capacity && (!oldest || (int32_t)(block->seq - oldest->seq) < 0))
            oldest = block;
    }
    uint32_t expected = AT_BLOCK_FULL;
    /* acquire: pairs with at__writer_submit's release store of FULL (slots, used); against
     * the writer's CAS to WRITING for a dump */
    if (!oldest || !__atomic_compare_exchange_n(&oldest->state, &expected, AT_BLOCK_FILLING, 0,
                                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return NULL; /* the writer took it for a dump: the caller tries again */
    *lost = (struct at_lost){.tid = oldest->tid};
    const struct at_event *slots = at__block_slots(oldest);
    for (uint32_t i = oldest->written; i < oldest->used; i++) { /* a dump wrote the others */
        if (slots[i].kind == 0)
            continue;
        if (lost->count++ == 0 || slots[i].tsc < lost->first_tsc)
            lost->first_tsc = slots[i].tsc;
        if (slots[i].tsc > lost->last_tsc)
            lost->last_tsc = slots[i].tsc;
    }
    /* Counted in the ring file before the events go, and the block hidden from recovery
     * (tid 0), so that a process killed from here on has them in the count and not in the
     * ring. Counted after they went, a kill during the clearing lost a block's events
     * uncounted. */
    at__ring_count_lost(AT_LOST_OVERWRITTEN, lost->count);
    oldest->tid = 0;
    memset(at__block_slots(oldest), 0, (size_t)oldest->used * sizeof(struct at_event));
    test_kill_at_steal();
    oldest->tid = tid;
    oldest->seq = seq;
    oldest->used = 0;
    oldest->written = 0;
    return oldest;
}

void at__ring_release(struct at_ring_block *block)
{
    uint32_t used = block->used < block->capacity ? block->used : block->capacity;
    memset(at__block_slots(block), 0, (size_t)used * sizeof(struct at_event));
    block->used = 0;
    block->written = 0;
    block->tid = 0;
    /* release: the cleared slots are visible to the next owner, which takes it with acquire */
    __atomic_store_n(&block->state, AT_BLOCK_FREE, __ATOMIC_RELEASE);
    /* release: pairs with at__ring_take's and at__writer_wait_free's acquire loads */
    __atomic_fetch_add(&at__ring.free_count, 1, __ATOMIC_RELEASE);
}

/* In a forked child: the mapping is the parent's (shared, so a store here would land in the
 * parent's blocks) and so is the file. Unmap it without removing the file. */
void at__ring_after_fork(void)
{
    if (at__ring.header)
        munmap(at__ring.header, at__ring.map_size);
    if (is_ring_file(at__ring.fd))
        close(at__ring.fd); /* the parent's, inherited */
    memset(&at__ring, 0, sizeof at__ring);
    at__ring.fd = -1;
    memset(early_lost, 0, sizeof early_lost); /* the parent's losses are the parent's */
}
