/* The writer: one background thread per process that turns handed-over blocks into frames.
 *
 * Recording threads never wait for it. A thread hands over a full block by marking it FULL and
 * bumping `pending`; it makes a futex wake only when the writer is asleep. The writer wakes on
 * that, or every 100 ms, and then: writes pending metadata as a META frame, and every FULL
 * block as an EVENTS frame (encoded into columns, compressed with one reusable zstd context,
 * checksummed), clearing and freeing each block after. At the end it also writes the blocks
 * threads still hold (their committed slots), a last clock sample, and the END record. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include "at_codec.h"
#include "recorder.h"

#define WRITER_POLL_NS (100 * 1000 * 1000ull)

static struct {
    int fd;
    char path[4096];
    pthread_t thread;
    ZSTD_CCtx *cctx;
    uint8_t *raw, *packed; /* encode and compress buffers, owned by the writer thread */
    size_t raw_cap, packed_cap;
    uint32_t meta_seq;
    uint64_t events_written, blocks_written, events_lost;
    int failed;             /* a write failed: nothing more goes to the file */
    uint64_t next_clock_ns;
    uint32_t stop;          /* set once by at__writer_stop; atomic */
    uint32_t pending;       /* futex word: bumped by every handover; atomic */
    uint32_t sleeping;      /* the writer is (about to be) in futex wait; seq_cst */
    uint32_t freed;         /* futex word: bumped when blocks are freed; atomic */
    uint32_t free_waiters;  /* threads in at__writer_wait_free; atomic */
} w = {.fd = -1};

extern uint64_t at__threads_total;

static int write_all(const struct iovec *iov_in, int n)
{
    struct iovec iov[2];
    memcpy(iov, iov_in, (size_t)n * sizeof *iov);
    struct iovec *v = iov;
    while (n > 0) {
        ssize_t done = writev(w.fd, v, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            return -errno;
        while (n > 0 && (size_t)done >= v->iov_len) {
            done -= (ssize_t)v->iov_len;
            v++, n--;
        }
        if (n > 0) {
            v->iov_base = (char *)v->iov_base + done;
            v->iov_len -= (size_t)done;
        }
    }
    return 0;
}

static void write_failed(int err, uint64_t events)
{
    if (!w.failed)
        at__warn("writing %s failed (%s); tracing goes on unrecorded, losses counted",
                 w.path, strerror(-err));
    w.failed = 1;
    w.events_lost += events;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 0;
    uint8_t *bigger = realloc(*buf, need);
    if (!bigger)
        return -ENOMEM;
    *buf = bigger;
    *cap = need;
    return 0;
}

/* Compresses raw[0..raw_len) when that makes it smaller, fills in the sizes and checksums of
 * h, and writes header and payload with one writev. */
static int write_frame(struct at_frame_header *h, const uint8_t *raw, size_t raw_len)
{
    const uint8_t *payload = raw;
    size_t payload_len = raw_len;
    h->encoding = AT_ENC_RAW;
    if (raw_len > 64 && grow(&w.packed, &w.packed_cap, ZSTD_compressBound(raw_len)) == 0) {
        size_t n = ZSTD_compressCCtx(w.cctx, w.packed, w.packed_cap, raw, raw_len,
                                     at__config.zstd_level);
        if (!ZSTD_isError(n) && n < raw_len) {
            payload = w.packed;
            payload_len = n;
            h->encoding = AT_ENC_ZSTD;
        }
    }
    h->magic = AT_FRAME_MAGIC;
    h->header_size = AT_FRAME_HEADER_SIZE;
    h->payload_size = (uint32_t)payload_len;
    h->raw_size = (uint32_t)raw_len;
    h->payload_crc = at_crc32c(0, payload, payload_len);
    h->header_crc = at_crc32c(0, h, offsetof(struct at_frame_header, header_crc));
    struct iovec iov[2] = {{h, sizeof *h}, {(void *)payload, payload_len}};
    return write_all(iov, 2);
}

static void write_meta(void)
{
    uint8_t *records;
    uint32_t count;
    size_t len = at__meta_take(&records, &count);
    if (len > 0 && !w.failed) {
        struct at_frame_header h = {.type = AT_FRAME_META, .seq = w.meta_seq++, .count = count};
        int err = write_frame(&h, records, len);
        if (err < 0)
            write_failed(err, 0);
    }
    free(records);
}

/* Writes slots[0..used) of a block as one EVENTS frame. */
static void write_block(struct at_ring_block *block, uint32_t used)
{
    struct at_block_info info;
    size_t len = at_events_encode(at__block_slots(block), used, w.raw, &info);
    if (info.count == 0 && info.torn == 0)
        return;
    if (w.failed) {
        w.events_lost += info.count;
        return;
    }
    struct at_frame_header h = {.type = AT_FRAME_EVENTS, .tid = block->tid, .seq = block->seq,
                                .count = info.count, .first_tsc = info.first_tsc,
                                .last_tsc = info.last_tsc, .torn = info.torn};
    int err = write_frame(&h, w.raw, len);
    if (err < 0) {
        write_failed(err, info.count);
        return;
    }
    w.events_written += info.count;
    w.blocks_written++;
}

/* Writes every FULL block; returns how many it freed. */
static unsigned drain(void)
{
    unsigned freed = 0;
    write_meta();
    for (uint32_t i = 0; i < at__ring.block_count; i++) {
        struct at_ring_block *block = at__ring_block(i);
        uint32_t expected = AT_BLOCK_FULL;
        /* acquire: pairs with the release in at__writer_submit, so the slots are complete */
        if (!__atomic_compare_exchange_n(&block->state, &expected, AT_BLOCK_WRITING, 0,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        write_block(block, block->used);
        at__ring_release(block);
        freed++;
    }
    if (freed) {
        __atomic_fetch_add(&w.freed, 1, __ATOMIC_RELEASE);
        if (__atomic_load_n(&w.free_waiters, __ATOMIC_ACQUIRE))
            at__futex(&w.freed, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
    }
    return freed;
}

/* Clock samples: one 50 ms after the start (so even a short or killed run has two), then one
 * a second. */
static void maybe_clock(void)
{
    uint64_t now = at__clock_ns(CLOCK_MONOTONIC);
    if (now < w.next_clock_ns)
        return;
    at__meta_clock();
    w.next_clock_ns = now + 1000 * 1000 * 1000ull;
}

static void sleep_unless_pending(uint32_t seen)
{
    struct timespec timeout = {0, WRITER_POLL_NS};
    __atomic_store_n(&w.sleeping, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w.pending, __ATOMIC_SEQ_CST) == seen &&
        !__atomic_load_n(&w.stop, __ATOMIC_SEQ_CST))
        at__futex(&w.pending, FUTEX_WAIT_PRIVATE, seen, &timeout);
    __atomic_store_n(&w.sleeping, 0, __ATOMIC_SEQ_CST);
}

/* The blocks threads still hold at the end: their committed slots, up to the last one. */
static void write_held_blocks(void)
{
    for (uint32_t i = 0; i < at__ring.block_count; i++) {
        struct at_ring_block *block = at__ring_block(i);
        if (__atomic_load_n(&block->state, __ATOMIC_ACQUIRE) != AT_BLOCK_FILLING)
            continue;
        const struct at_event *slots = at__block_slots(block);
        uint32_t used = block->capacity;
        while (used > 0 && __atomic_load_n(&slots[used - 1].kind, __ATOMIC_ACQUIRE) == 0)
            used--;
        write_block(block, used);
    }
}

static void finish(void)
{
    drain();
    write_held_blocks();
    at__meta_clock();
    if (w.events_lost)
        at__meta_lost(0, AT_LOST_WRITE_ERROR, w.events_lost, 0, 0);
    at__meta_end(w.events_written,
                 __atomic_load_n(&at__dropped_total, __ATOMIC_RELAXED) + w.events_lost,
                 __atomic_load_n(&at__threads_total, __ATOMIC_RELAXED), w.blocks_written);
    write_meta();
}

static void *writer_main(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "actortrace-w");
    at__self.internal = 1; /* what this thread does (futex waits, writes) is not the program's */
    w.next_clock_ns = at__clock_ns(CLOCK_MONOTONIC) + 50 * 1000 * 1000ull;
    for (;;) {
        uint32_t seen = __atomic_load_n(&w.pending, __ATOMIC_SEQ_CST);
        drain();
        maybe_clock();
        if (__atomic_load_n(&w.stop, __ATOMIC_ACQUIRE))
            break;
        sleep_unless_pending(seen);
    }
    finish();
    return NULL;
}

static int write_file_header(void)
{
    struct at_file_header fh = {.version_major = AT_FORMAT_MAJOR,
                                .version_minor = AT_FORMAT_MINOR,
                                .header_size = sizeof fh};
    memcpy(fh.magic, AT_FILE_MAGIC, AT_FILE_MAGIC_LEN);
    struct iovec iov = {&fh, sizeof fh};
    return write_all(&iov, 1);
}

int at__writer_start(int fd, const char *trace_path)
{
    w.fd = fd;
    snprintf(w.path, sizeof w.path, "%s", trace_path);
    w.cctx = ZSTD_createCCtx();
    w.raw_cap = at_events_encode_bound(at__ring.capacity);
    w.raw = malloc(w.raw_cap);
    if (!w.cctx || !w.raw)
        return -ENOMEM;
    AT_RETURN_IF_ERROR(write_file_header());
    write_meta(); /* the PROCESS record and the first clock sample lead the file */
    if (w.failed)
        return -EIO;
    /* All signals blocked: the program's signals go to its own threads, and a write past
     * RLIMIT_FSIZE fails with EFBIG here instead of killing the process with SIGXFSZ. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&w.thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -err;
}

void at__writer_submit(struct at_ring_block *block, uint32_t used)
{
    block->used = used;
    /* release: the slots and `used` are visible to the writer that sees FULL */
    __atomic_store_n(&block->state, AT_BLOCK_FULL, __ATOMIC_RELEASE);
    __atomic_fetch_add(&w.pending, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w.sleeping, __ATOMIC_SEQ_CST))
        at__futex(&w.pending, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void at__writer_wait_free(uint64_t timeout_ns)
{
    struct timespec timeout = {(time_t)(timeout_ns / 1000000000u),
                               (long)(timeout_ns % 1000000000u)};
    uint32_t seen = __atomic_load_n(&w.freed, __ATOMIC_ACQUIRE);
    __atomic_fetch_add(&w.free_waiters, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&at__ring.free_count, __ATOMIC_ACQUIRE) == 0)
        at__futex(&w.freed, FUTEX_WAIT_PRIVATE, seen, &timeout);
    __atomic_fetch_sub(&w.free_waiters, 1, __ATOMIC_SEQ_CST);
}

void at__writer_stop(void)
{
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    at__futex(&w.pending, FUTEX_WAKE_PRIVATE, 1, NULL);
    pthread_join(w.thread, NULL);
    close(w.fd);
    w.fd = -1;
    ZSTD_freeCCtx(w.cctx);
    w.cctx = NULL;
    free(w.raw);
    free(w.packed);
    w.raw = w.packed = NULL;
}
