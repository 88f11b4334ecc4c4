/* The block pool. All blocks live in one MAP_SHARED mapping of a file (in ACTORTRACE_RING_DIR,
 * /dev/shm by default), so events a thread has committed survive the process being killed:
 * the page cache keeps them and `tracedecode` recovers them from the file. A clean exit removes
 * the file. Where the file cannot be made, the pool is anonymous memory and only that recovery
 * is lost.
 *
 * Each block moves FREE -> FILLING (a thread took it, CAS) -> FULL (handed to the writer) ->
 * WRITING (the writer encodes it) -> FREE (slots cleared by the writer, so that a recording
 * thread never pays for clearing). free_count lets a thread see "nothing free" in one load. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "recorder.h"

struct at_ring at__ring;

static int open_ring_file(size_t size)
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
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            break;
        /* Reserve the pages now: a tmpfs that runs out later would kill the program with
         * SIGBUS on a store in the hot path. */
        int err = posix_fallocate(fd, 0, (off_t)size);
        if (err == 0)
            return fd;
        close(fd);
        unlink(at__ring.path);
        errno = err;
        break;
    }
    at__warn("cannot create a ring file in %s (%s); events will not survive a SIGKILL",
             at__config.ring_dir, strerror(errno));
    at__ring.path[0] = '\0';
    return -1;
}

static void init_blocks(const char *trace_path)
{
    struct at_ring_header *h = at__ring.header;
    memcpy(h->magic, AT_RING_MAGIC, sizeof h->magic);
    h->block_size = at__ring.block_size;
    h->block_count = at__ring.block_count;
    h->pid = (uint32_t)getpid();
    snprintf(h->trace_path, sizeof h->trace_path, "%s", trace_path);
    for (uint32_t i = 0; i < at__ring.block_count; i++)
        at__ring_block(i)->capacity = at__ring.capacity;
    at__ring.free_count = at__ring.block_count;
}

int at__ring_create(const char *trace_path)
{
    uint32_t block_size = at__config.block_kb * 1024u;
    uint64_t blocks = (uint64_t)at__config.buffer_mb * 1024u / at__config.block_kb;
    if (blocks < 4) {
        at__warn("ACTORTRACE_BUFFER_MB holds fewer than 4 blocks of ACTORTRACE_BLOCK_KB; "
                 "using 4 blocks");
        blocks = 4;
    }
    size_t size = sizeof(struct at_ring_header) + (size_t)blocks * block_size;
    int fd = open_ring_file(size);
    /* MAP_POPULATE: the page faults of first use are paid here, once, and not by the first
     * few hundred thousand events (a fault costs as much as a hundred events) */
    int flags = MAP_POPULATE | (fd >= 0 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS);
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        int err = errno;
        at__ring_remove();
        return -err;
    }
    at__ring.header = map;
    at__ring.base = (char *)map + sizeof(struct at_ring_header);
    at__ring.map_size = size;
    at__ring.block_size = block_size;
    at__ring.block_count = (uint32_t)blocks;
    at__ring.capacity = (block_size - sizeof(struct at_ring_block)) / sizeof(struct at_event);
    init_blocks(trace_path);
    return 0;
}

/* Called at a clean end: every block is in the trace, so the file has nothing to recover. The
 * mapping stays, since threads still running may record into it until the process ends. */
void at__ring_remove(void)
{
    if (at__ring.path[0])
        unlink(at__ring.path);
    at__ring.path[0] = '\0';
}

struct at_ring_block *at__ring_block(uint32_t index)
{
    return (struct at_ring_block *)(at__ring.base + (size_t)index * at__ring.block_size);
}

struct at_ring_block *at__ring_take(uint32_t tid, uint32_t seq)
{
    if (__atomic_load_n(&at__ring.free_count, __ATOMIC_ACQUIRE) == 0)
        return NULL;
    uint32_t start = __atomic_fetch_add(&at__ring.hint, 1, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < at__ring.block_count; i++) {
        struct at_ring_block *block = at__ring_block((start + i) % at__ring.block_count);
        uint32_t expected = AT_BLOCK_FREE;
        if (__atomic_load_n(&block->state, __ATOMIC_RELAXED) != AT_BLOCK_FREE)
            continue;
        /* acquire: the writer's clearing of the slots happens before our stores into them */
        if (__atomic_compare_exchange_n(&block->state, &expected, AT_BLOCK_FILLING, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            __atomic_fetch_sub(&at__ring.free_count, 1, __ATOMIC_RELAXED);
            block->tid = tid;
            block->seq = seq;
            block->used = 0;
            return block;
        }
    }
    return NULL;
}

/* Overwrite mode: the oldest FULL block (smallest seq) is taken back for thread tid. Its
 * committed events, whose count and time range go into *lost, are discarded. */
struct at_ring_block *at__ring_steal_oldest(uint32_t tid, uint32_t seq, struct at_lost *lost)
{
    struct at_ring_block *oldest = NULL;
    for (uint32_t i = 0; i < at__ring.block_count; i++) {
        struct at_ring_block *block = at__ring_block(i);
        if (__atomic_load_n(&block->state, __ATOMIC_ACQUIRE) == AT_BLOCK_FULL &&
            (!oldest || (int32_t)(block->seq - oldest->seq) < 0))
            oldest = block;
    }
    uint32_t expected = AT_BLOCK_FULL;
    if (!oldest || !__atomic_compare_exchange_n(&oldest->state, &expected, AT_BLOCK_FILLING, 0,
                                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return NULL; /* the writer took it for a dump: the caller tries again */
    *lost = (struct at_lost){.tid = oldest->tid};
    const struct at_event *slots = at__block_slots(oldest);
    for (uint32_t i = 0; i < oldest->used; i++) {
        if (slots[i].kind == 0)
            continue;
        if (lost->count++ == 0 || slots[i].tsc < lost->first_tsc)
            lost->first_tsc = slots[i].tsc;
        if (slots[i].tsc > lost->last_tsc)
            lost->last_tsc = slots[i].tsc;
    }
    memset(at__block_slots(oldest), 0, (size_t)oldest->used * sizeof(struct at_event));
    oldest->tid = tid;
    oldest->seq = seq;
    oldest->used = 0;
    return oldest;
}

void at__ring_release(struct at_ring_block *block)
{
    uint32_t used = block->used < block->capacity ? block->used : block->capacity;
    memset(at__block_slots(block), 0, (size_t)used * sizeof(struct at_event));
    block->used = 0;
    block->tid = 0;
    /* release: the cleared slots are visible to the next owner, which takes it with acquire */
    __atomic_store_n(&block->state, AT_BLOCK_FREE, __ATOMIC_RELEASE);
    __atomic_fetch_add(&at__ring.free_count, 1, __ATOMIC_RELEASE);
}

/* In a forked child: the mapping is the parent's (shared, so a store here would land in the
 * parent's blocks) and so is the file. Unmap it without removing the file. */
void at__ring_after_fork(void)
{
    if (at__ring.header)
        munmap(at__ring.header, at__ring.map_size);
    memset(&at__ring, 0, sizeof at__ring);
}
