/* The writer: one background thread per process that turns handed-over blocks into frames.
 *
 * A thread hands over a full block without waiting for it: it marks the block FULL and bumps
 * `pending`; it wakes the writer (a futex wake) only when the writer is asleep and half
 * the pool is in use: a wake-up per block would cost the recording thread a system call and
 * put the writer on a core the program is using, thousands of times a second. The writer wakes
 * on that, or every 100 ms, and then: writes pending metadata as a META frame, and every FULL
 * block as an EVENTS frame (encoded into columns, compressed with one reusable zstd context,
 * checksummed), several frames to a write, clearing and freeing each block once its frame is
 * in the file. At the end it also writes the blocks threads still hold (their committed
 * slots), a last clock sample, and the END record.
 *
 * A recording thread waits for the writer only when it finds no free block (record.c,
 * take_block): in block mode until one is freed, in the others while the writer can still grow
 * the pool or take back idle threads' blocks, and in drop mode a short while more
 * (at__writer_wait_free, woken by wake_free_waiters).
 *
 * In overwrite mode the blocks stay in memory (threads reuse the oldest, record.c) and are
 * written only at the end or when a dump is requested (signals.c).
 *
 * When a write fails (a full disk, RLIMIT_FSIZE), the file is cut back to the end of the last
 * whole frame and nothing more is written until the end, when a LOST record with the count and
 * time range of every event that did not reach the file, and the END record, are written in
 * place of the last frames if that is what it takes to make room for them. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx, ZSTD_estimateCCtxSize_usingCParams */
#include <zstd.h>

#include "at_codec.h"
#include "losses.h"
#include "meta.h"
#include "stacks.h"
#include "takeback.h"
#include "writer.h"

#define WRITER_POLL_NS (100 * 1000 * 1000ull)
/* At the end, how long the writer waits for a lock a program thread may hold: one that a fatal
 * signal or _exit stopped for good never lets go of it. */
#define END_LOCK_WAIT_NS (100 * 1000 * 1000ull)
/* The writer never waits long for a lock a program thread may hold, so that a signal handler
 * that interrupted that thread can wait for a free block (block mode) without a deadlock. */
#define META_LOCK_WAIT_NS (10 * 1000 * 1000ull)
#define RECENT_FRAMES     16
/* EVENTS frames are gathered and written with one write of up to BATCH_BYTES, at most
 * BATCH_FRAMES of them holding at most BATCH_BLOCKS blocks (a quarter of the pool, while it is
 * small): a write per frame cost the writer about a tenth of its time on the nop_send loop and
 * a fifth on pingpong. */
#define BATCH_BYTES  (256u << 10)
#define BATCH_FRAMES 32
#define BATCH_BLOCKS 64
/* Up to FRAME_BLOCKS full blocks of one thread go into one frame: zstd's fixed cost per call
 * is large beside what one 64 KiB block holds. */
#define FRAME_BLOCKS 8
/* Frames written without the clock's step or lattice after one with too many events off it
 * (write_group): then one in STEP_REST + 1 frames tries it again, in case the traffic changed. */
#define STEP_REST 64

/* An EVENTS frame gathered for the next write, with the blocks it came from (none: a block the
 * writer does not give back, a dump's or the end's), which go back to the pool only once their
 * events are in the file: until then ring recovery still finds them there. */
struct batched_frame {
    struct at_ring_block *blocks[FRAME_BLOCKS];
    unsigned nblocks;
    unsigned framed; /* blocks in the frame; 0: nothing of the blocks goes to the file */
    size_t offset;   /* of the frame in the batch */
    struct at_block_info info;
};

/* The blocks of one frame: one thread's, in block-number order, and the slots of each to write. */
struct group {
    struct at_ring_block *blocks[FRAME_BLOCKS];
    uint32_t used[FRAME_BLOCKS];
    unsigned n;
};

/* The block table of a frame being made (AT_FRAME_EVENTS_BLOCKS), of the blocks that have
 * anything to write. */
struct table {
    struct at_frame_blocks head;
    struct at_frame_block entry[FRAME_BLOCKS];
};

/* An EVENTS frame in the file, kept so that it can be given back for the final records. */
struct written_frame {
    uint64_t start;
    uint32_t count, blocks;
    uint64_t first_tsc, last_tsc;
};

static struct {
    int fd;    /* -1 once the program closed or replaced it */
    dev_t dev; /* the trace file, to know the descriptor is still ours */
    ino_t ino;
    char path[4096];
    ZSTD_CCtx *cctx;
    ZSTD_CCtx *huffman; /* the entropy stage of the predicted encoding (at_events_entropy) */
    void *cctx_space, *huffman_space; /* their memory (static_cctx) */
    uint8_t *raw, *packed;            /* encode and compress buffers, owned by the writer thread */
    uint8_t *batch;                   /* EVENTS frames gathered for one write */
    size_t batch_len, batch_cap;
    struct batched_frame batched[BATCH_FRAMES];
    unsigned batch_count, batch_blocks;
    struct at_ring_block *claimed[BATCH_BLOCKS]; /* FULL blocks drain() set WRITING */
    struct at_ring_block **taken; /* a take-back pass's blocks (takeback.c): block_max */
    uint8_t *meta;                /* the metadata taken for a META frame, and a clock sample */
    size_t raw_cap, packed_cap;
    uint32_t meta_seq;
    uint64_t events_written, blocks_written;
    uint64_t file_end; /* the end of the last whole frame */
    struct written_frame recent[RECENT_FRAMES];
    unsigned recent_count, recent_next;
    int failed;    /* a write failed: nothing more goes to the file until the end */
    int finishing; /* in finish(): no allocation, no free, no lock without a deadline */
    uint64_t lost, lost_first_tsc, lost_last_tsc; /* events that did not reach the file */
    uint64_t next_clock_ns;
    int clock_due;                     /* a clock sample goes with the next META frame */
    unsigned clock_samples;            /* made due by maybe_clock */
    uint32_t stop;                     /* set once by at__writer_stop; atomic */
    uint32_t finished;                 /* futex word: the writer has written the end; atomic */
    uint32_t dump;                     /* overwrite mode: write the blocks now; atomic */
    uint32_t pending;                  /* futex word: bumped by every handover; atomic */
    uint32_t sleeping;                 /* the writer is (about to be) in futex wait; seq_cst */
    uint32_t freed;                    /* futex word: bumped when blocks are freed; atomic */
    uint32_t free_waiters;             /* threads in at__writer_wait_free; atomic */
    struct at_tsc_lattice tsc_lattice; /* the clock's step or lattice (at_tsc_lattice) */
    uint32_t lattice_ready; /* tsc_lattice is set: release, then acquire, since the end may be
                               written from another thread; 0: the columns without */
    unsigned step_rest;     /* frames left to write without the step or lattice (write_group) */
} w = {.fd = -1};

/* The writer's CPU time by phase, in the benchmarks' copies of the library that
 * tests/bench/programs.sh reads (AT_BENCH_PHASES; make bench builds them in build/bench/phases/):
 * each phase is timed with the writer thread's CPU clock, a few times a pass, and at the end the
 * writer appends one line to the file PHASES_OUT names, in nanoseconds:
 * "encode E pack P grow G write W clear C writer T events N", T being all its CPU time. Every
 * other copy compiles PHASE(which, statement) to the statement alone. */
#ifdef AT_BENCH_PHASES
enum phase { PHASE_ENCODE, PHASE_PACK, PHASE_GROW, PHASE_WRITE, PHASE_CLEAR, PHASES };
static uint64_t phase_ns[PHASES];
#define PHASE(which, statement)                                                                    \
    do {                                                                                           \
        uint64_t phase_start = at__clock_ns(CLOCK_THREAD_CPUTIME_ID);                              \
        statement;                                                                                 \
        phase_ns[which] += at__clock_ns(CLOCK_THREAD_CPUTIME_ID) - phase_start;                    \
    } while (0)

static void report_phases(void)
{
    const char *path = getenv("PHASES_OUT");
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    if (fd < 0)
        return;
    char line[256];
    int n = snprintf(
        line, sizeof line,
        "encode %llu pack %llu grow %llu write %llu clear %llu writer %llu "
        "events %llu\n",
        (unsigned long long)phase_ns[PHASE_ENCODE], (unsigned long long)phase_ns[PHASE_PACK],
        (unsigned long long)phase_ns[PHASE_GROW], (unsigned long long)phase_ns[PHASE_WRITE],
        (unsigned long long)phase_ns[PHASE_CLEAR],
        (unsigned long long)at__clock_ns(CLOCK_THREAD_CPUTIME_ID),
        (unsigned long long)w.events_written);
    if (write(fd, line, (size_t)n) != n)
        at__warn("PHASES_OUT: cannot write to %s", path);
    close(fd);
}
#else
#define PHASE(which, statement) statement
static void report_phases(void)
{
}
#endif

uint64_t at__threads_total; /* threads that took a block (record.c), for the end; atomic */

static int is_trace_file(int fd)
{
    return at__fd_is(fd, w.dev, w.ino);
}

/* Checked before each use of the descriptor: a program that closes the descriptors it did not
 * open (daemons, sandboxes) and opens a file of its own may get our number, and nothing of
 * ours may go into its file. */
static int fd_ours(void)
{
    if (is_trace_file(w.fd))
        return 1;
    if (w.fd >= 0)
        at__warn("the program closed or reused descriptor %d, the trace file %s; nothing more is "
                 "written to it",
                 w.fd, w.path);
    w.fd = -1;
    w.failed = 1;
    return 0;
}

static int write_all(const struct iovec *iov_in, int n)
{
    if (!fd_ours())
        return -EBADF;
    struct iovec iov[2];
    memcpy(iov, iov_in, (size_t)n * sizeof *iov);
    struct iovec *v = iov;
    while (n > 0) {
        ssize_t done;
        PHASE(PHASE_WRITE, done = writev(w.fd, v, n));
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

/* Cuts the file back to `end`, the end of a whole frame, so that a reader never meets a frame
 * a failed write left half written. */
static void cut_back(uint64_t end)
{
    if (fd_ours() && ftruncate(w.fd, (off_t)end) == 0 && lseek(w.fd, (off_t)end, SEEK_SET) >= 0)
        w.file_end = end;
}

static void count_lost(uint64_t count, uint64_t first_tsc, uint64_t last_tsc)
{
    if (count == 0)
        return;
    if (w.lost == 0 || first_tsc < w.lost_first_tsc)
        w.lost_first_tsc = first_tsc;
    if (last_tsc > w.lost_last_tsc)
        w.lost_last_tsc = last_tsc;
    w.lost += count;
}

static void write_failed(int err)
{
    if (w.fd >= 0) /* else fd_ours said why */
        at__warn("writing %s failed (%s); the program goes on, the events not written are counted "
                 "in the trace's last record",
                 w.path, strerror(-err));
    w.failed = 1;
    cut_back(w.file_end);
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

/* Packs raw[0..len) into out (cap bytes) by what h->encoding says raw holds: zstd for columns
 * and records (AT_ENC_RAW, AT_ENC_STEPPED), the entropy stage for predicted events
 * (AT_ENC_PREDICTED). Returns the packed size and sets h->encoding to match, or returns 0: stored
 * as it is, because packing failed, would not make it smaller, or has no room. */
static size_t pack(struct at_frame_header *h, const uint8_t *raw, size_t len, uint8_t *out,
                   size_t cap)
{
    if (len <= 64 || cap < ZSTD_compressBound(len))
        return 0;
    if (h->encoding == AT_ENC_PREDICTED) {
        size_t n = at_events_entropy(w.huffman, out, cap, raw, len);
        h->encoding = n && n < len ? AT_ENC_PREDICTED_ZSTD : h->encoding;
        return h->encoding == AT_ENC_PREDICTED_ZSTD ? n : 0;
    }
    size_t n = ZSTD_compress2(w.cctx, out, cap, raw, len);
    if (ZSTD_isError(n) || n >= len)
        return 0;
    h->encoding = h->encoding == AT_ENC_STEPPED   ? AT_ENC_STEPPED_ZSTD
                  : h->encoding == AT_ENC_LATTICE ? AT_ENC_LATTICE_ZSTD
                                                  : AT_ENC_ZSTD;
    return n;
}

/* Packs raw[0..raw_len) into out (cap bytes) when that makes it smaller and `packed` says to,
 * and fills in the sizes, encoding and checksums of h, whose encoding says how raw is encoded
 * (AT_ENC_RAW, AT_ENC_STEPPED or AT_ENC_PREDICTED). Returns the payload: out, or raw as it is. */
static const uint8_t *seal(struct at_frame_header *h, const uint8_t *raw, size_t raw_len,
                           uint8_t *out, size_t cap, int packed)
{
    size_t n = packed ? pack(h, raw, raw_len, out, cap) : 0;
    const uint8_t *payload = n ? out : raw;
    size_t payload_len = n ? n : raw_len;
    h->magic = AT_FRAME_MAGIC;
    h->payload_size = (uint32_t)payload_len;
    h->raw_size = (uint32_t)raw_len;
    h->payload_crc = at_crc32c(0, payload, payload_len);
    h->header_crc = at_crc32c(0, h, offsetof(struct at_frame_header, header_crc));
    return payload;
}

/* Writes one frame on its own, header and payload with one writev. */
static int write_frame(struct at_frame_header *h, const uint8_t *raw, size_t raw_len)
{
    if (!w.finishing)
        grow(&w.packed, &w.packed_cap, ZSTD_compressBound(raw_len)); /* else stored raw */
    const uint8_t *payload = seal(h, raw, raw_len, w.packed, w.packed_cap, 1);
    struct iovec iov[2] = {{h, sizeof *h}, {(void *)payload, h->payload_size}};
    int err = write_all(iov, 2);
    if (err == 0)
        w.file_end += sizeof *h + h->payload_size;
    return err;
}

static void remember(uint64_t start, uint32_t blocks, const struct at_block_info *info)
{
    w.recent[w.recent_next] =
        (struct written_frame){start, info->count, blocks, info->first_tsc, info->last_tsc};
    w.recent_next = (w.recent_next + 1) % RECENT_FRAMES;
    if (w.recent_count < RECENT_FRAMES)
        w.recent_count++;
}

/* Wakes as many waiting threads as blocks were freed: waking them all would put a thousand
 * threads on the cores, each to look for a block, while the writer needs one to free more. A
 * waiter not woken looks again when its wait times out. */
static void wake_free_waiters(uint32_t blocks)
{
    /* release: pairs with the acquire load of freed in at__writer_wait_free */
    __atomic_fetch_add(&w.freed, 1, __ATOMIC_RELEASE);
    /* pairs with the waiter's seq_cst increment of free_waiters: a waiter that registered
     * before this load is woken; one after it sees free_count > 0 and does not sleep */
    if (__atomic_load_n(&w.free_waiters, __ATOMIC_ACQUIRE))
        at__futex(&w.freed, FUTEX_WAKE_PRIVATE, blocks < INT32_MAX ? blocks : INT32_MAX, NULL);
}

/* Writes the gathered frames with one write, then gives their blocks back to the pool. */
static void flush(void)
{
    if (w.batch_count == 0)
        return;
    struct iovec iov = {w.batch, w.batch_len};
    int err = w.batch_len ? write_all(&iov, 1) : 0;
    if (err < 0)
        write_failed(err);
    unsigned released = 0;
    for (unsigned i = 0; i < w.batch_count; i++) {
        const struct batched_frame *f = &w.batched[i];
        if (err < 0 && f->framed) {
            count_lost(f->info.count, f->info.first_tsc, f->info.last_tsc);
        } else if (f->framed) {
            remember(w.file_end + f->offset, f->framed, &f->info);
            w.events_written += f->info.count;
            w.blocks_written += f->framed;
        }
        for (unsigned b = 0; b < f->nblocks; b++)
            PHASE(PHASE_CLEAR, at__ring_release(f->blocks[b]));
        released += f->nblocks;
    }
    if (err == 0)
        w.file_end += w.batch_len;
    w.batch_len = 0;
    w.batch_count = w.batch_blocks = 0;
    if (released)
        wake_free_waiters(released);
}

/* The most blocks gathered before a write: a quarter of the pool, so that a small pool is not
 * held back from the threads. */
static unsigned batch_blocks(void)
{
    unsigned most = at__ring.block_count / 4;
    return most < 1 ? 1 : most > BATCH_BLOCKS ? BATCH_BLOCKS : most;
}

/* The most blocks of a frame: no more events than a reader accepts in one. */
static unsigned frame_blocks_max(void)
{
    unsigned most = AT_FRAME_MAX_EVENTS / at__ring.capacity;
    return most < FRAME_BLOCKS ? most : FRAME_BLOCKS;
}

static unsigned frame_blocks(void)
{
    unsigned most = batch_blocks();
    return most < frame_blocks_max() ? most : frame_blocks_max();
}

static void add_info(struct at_block_info *total, const struct at_block_info *one)
{
    if (one->count && (total->count == 0 || one->first_tsc < total->first_tsc))
        total->first_tsc = one->first_tsc;
    if (one->count && one->last_tsc > total->last_tsc)
        total->last_tsc = one->last_tsc;
    total->count += one->count;
    total->torn += one->torn;
    total->off_step += one->off_step;
}

/* Encodes the group's slots into w.raw, block after block; fills the table with the blocks
 * that have anything to write and *info with their totals. Returns the length. */
static size_t encode_group(const struct group *g, const struct at_tsc_lattice *clock,
                           struct table *t, struct at_block_info *info)
{
    size_t len = 0;
    *info = (struct at_block_info){0};
    t->head.count = 0;
    for (unsigned i = 0; i < g->n; i++) {
        struct at_ring_block *b = g->blocks[i];
        uint32_t used = g->used[i], from = b->written < used ? b->written : used; /* a dump's */
        struct at_block_info one;
        const struct at_event *slots = at__block_slots(b) + from;
        size_t n = at__config.predicted
                       ? at_events_predict(slots, used - from, w.raw + len, &one)
                       : at_events_encode(slots, used - from, w.raw + len, &one, clock);
        if (one.count == 0 && one.torn == 0)
            continue;
        t->entry[t->head.count++] = (struct at_frame_block){
            b->seq, one.count, one.torn, (uint32_t)n, one.first_tsc, one.last_tsc};
        add_info(info, &one);
        len += n;
    }
    return len;
}

static size_t table_size(const struct table *t)
{
    return t->head.count > 1 ? sizeof t->head + t->head.count * sizeof t->entry[0] : 0;
}

/* Whether blocks pile up: the pool is at its largest, and threads wait for a free block or
 * less than a quarter of it is free. Then the writer stores predicted frames without their
 * entropy stage, about a third of its work on them (the frame's encoding says so), and the
 * file grows faster for a while, rather than the threads waiting (block mode) or dropping
 * events. While the pool can grow it grows instead. Columns keep zstd: stored as they are they
 * take four to ten times the bytes. */
static int behind(void)
{
    /* relaxed: a heuristic, as pool_half_used */
    uint32_t count = __atomic_load_n(&at__ring.block_count, __ATOMIC_RELAXED);
    return at__config.predicted &&
           count >= __atomic_load_n(&at__ring.block_max, __ATOMIC_RELAXED) &&
           (__atomic_load_n(&w.free_waiters, __ATOMIC_RELAXED) > 0 || at__ring_free() < count / 4);
}

/* Appends w.raw[0..len) to the batch as one EVENTS frame of thread tid, with the block table
 * when it holds several blocks. */
static void append_frame(uint32_t tid, const struct at_tsc_lattice *clock, struct table *t,
                         size_t len, const struct at_block_info *info)
{
    size_t extra = table_size(t);
    struct at_frame_header h = {.type = extra ? AT_FRAME_EVENTS_BLOCKS : AT_FRAME_EVENTS,
                                .header_size = (uint16_t)(sizeof h + extra),
                                .tid = tid,
                                .seq = t->entry[0].seq,
                                .count = info->count,
                                .first_tsc = info->first_tsc,
                                .last_tsc = info->last_tsc,
                                .torn = info->torn,
                                .encoding = at__config.predicted ? AT_ENC_PREDICTED
                                                                 : at_tsc_lattice_encoding(clock)};
    if (extra)
        t->head.crc = at_crc32c(0, t->entry, extra - sizeof t->head);
    uint8_t *frame = w.batch + w.batch_len;
    const uint8_t *payload;
    PHASE(PHASE_PACK, payload = seal(&h, w.raw, len, frame + h.header_size,
                                     w.batch_cap - w.batch_len - h.header_size, !behind()));
    if (payload == w.raw)
        memcpy(frame + h.header_size, w.raw, len);
    memcpy(frame, &h, sizeof h);
    memcpy(frame + sizeof h, t, extra);
    w.batch_len += h.header_size + h.payload_size;
}

/* Adds the group's slots to the batch as one EVENTS frame, and its blocks when give_back says
 * they return to the pool once written. */
static void write_group(const struct group *g, int give_back)
{
    struct table t;
    struct at_block_info info;
    /* acquire: pairs with the release in writer_main; before it, the columns without */
    const struct at_tsc_lattice *clock =
        w.step_rest || !__atomic_load_n(&w.lattice_ready, __ATOMIC_ACQUIRE) ? NULL : &w.tsc_lattice;
    size_t len;
    PHASE(PHASE_ENCODE, len = encode_group(g, clock, &t, &info));
    /* Events whose tsc is off the step or lattice cost a place in a list each: where one in 32
     * or more is (a thread recording as fast as it can reads the clock between its steps, at
     * 10 ns an event), the step makes the frame larger and its encoding slower than without, so
     * the next STEP_REST frames go without it. */
    if (at_tsc_lattice_encoding(clock) != AT_ENC_RAW && info.off_step * 32 > info.count)
        w.step_rest = STEP_REST;
    else if (w.step_rest)
        w.step_rest--;
    size_t need = sizeof(struct at_frame_header) + table_size(&t) + ZSTD_compressBound(len);
    if (w.batch_count == BATCH_FRAMES || w.batch_blocks + g->n > batch_blocks() ||
        w.batch_len + need > w.batch_cap)
        flush(); /* which may fail: then this group is lost too */
    unsigned framed = w.failed ? 0 : t.head.count;
    if (w.failed)
        count_lost(info.count, info.first_tsc, info.last_tsc);
    struct batched_frame *f = &w.batched[w.batch_count++];
    *f = (struct batched_frame){
        .nblocks = give_back ? g->n : 0, .framed = framed, .offset = w.batch_len, .info = info};
    memcpy(f->blocks, g->blocks, f->nblocks * sizeof *f->blocks);
    w.batch_blocks += f->nblocks;
    if (framed)
        append_frame(g->blocks[0]->tid, clock, &t, len, &info);
}

/* Adds slots[0..used) of one block to the batch as an EVENTS frame (see write_group). */
static void write_block(struct at_ring_block *block, uint32_t used, int give_back)
{
    struct group g = {.blocks = {block}, .used = {used}, .n = 1};
    write_group(&g, give_back);
}

static int write_meta_frame(const uint8_t *records, size_t len, uint32_t count)
{
    flush(); /* the file keeps the order frames were made in */
    struct at_frame_header h = {.type = AT_FRAME_META,
                                .header_size = AT_FRAME_HEADER_SIZE,
                                .seq = w.meta_seq++,
                                .count = count};
    return write_frame(&h, records, len);
}

/* Writes the pending metadata, and a clock sample when one is due; after a failure they are
 * dropped (the end says what was lost). While finishing, what a stopped thread keeps locked is
 * left out. */
static int write_meta(void)
{
    uint32_t count;
    at__stacks_publish(w.finishing); /* the stacks new since the last frame, symbolized */
    long len = at__meta_take(w.meta, &count, w.finishing ? END_LOCK_WAIT_NS : META_LOCK_WAIT_NS);
    if (len < 0)
        len = count = 0;
    if (w.clock_due) {
        uint64_t clock[3];
        at__meta_clock_fields(clock);
        len += (long)at__meta_encode(w.meta + len, AT_META_CLOCK, clock, 3);
        count++;
        w.clock_due = 0;
    }
    if (len == 0 || w.failed)
        return 0;
    return write_meta_frame(w.meta, (size_t)len, count);
}

/* Takes a FULL block for writing (WRITING); returns whether it was one. */
static int claim(struct at_ring_block *block)
{
    uint32_t expected = AT_BLOCK_FULL;
    /* acquire: pairs with the release in at__writer_submit, so the slots are complete */
    return __atomic_compare_exchange_n(&block->state, &expected, AT_BLOCK_WRITING, 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Adds a FULL block to the batch, to be freed once written. */
static void write_if_full(struct at_ring_block *block)
{
    if (claim(block))
        write_block(block, block->used, 1);
}

/* Takes back idle threads' blocks when a thread asked (takeback.c) and writes them, `used`
 * slots of each; they go back to the pool once written, waking waiters. */
static void write_taken_back(void)
{
    uint32_t n = at__takeback_pass(w.taken, at__ring.block_max);
    for (uint32_t i = 0; i < n; i++) {
        /* relaxed: the writer owns the block (a thread's, taken back, or one it claimed);
         * WRITING at once, never FULL, where a thread could take a filled one over */
        __atomic_store_n(&w.taken[i]->state, AT_BLOCK_WRITING, __ATOMIC_RELAXED);
        write_block(w.taken[i], w.taken[i]->used, 1);
    }
    if (n)
        flush();
}

static int by_thread_and_seq(const void *a, const void *b)
{
    const struct at_ring_block *x = *(struct at_ring_block *const *)a;
    const struct at_ring_block *y = *(struct at_ring_block *const *)b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (int32_t)(x->seq - y->seq) < 0 ? -1 : x->seq != y->seq; /* seq wraps */
}

/* Writes the n claimed blocks, each thread's in block-number order, several to a frame. */
static void write_claimed(unsigned n)
{
    qsort(w.claimed, n, sizeof *w.claimed, by_thread_and_seq);
    struct group g = {.n = 0};
    for (unsigned i = 0; i < n; i++) {
        struct at_ring_block *block = w.claimed[i];
        if (g.n && (g.n == frame_blocks() || g.blocks[0]->tid != block->tid)) {
            write_group(&g, 1);
            g.n = 0;
        }
        g.blocks[g.n] = block;
        g.used[g.n++] = block->used;
    }
    if (g.n)
        write_group(&g, 1);
}

/* Writes the metadata, and every FULL block unless overwrite mode keeps them in memory. */
static void drain(int events)
{
    int err = write_meta();
    if (err < 0)
        write_failed(err);
    if (!events)
        return;
    /* a test of drop mode has the writer fall behind for certain */
    at__test_delay("ACTORTRACE_TEST_WRITER_DELAY_MS");
    unsigned n = 0; /* blocks claimed, a batch's worth at most before they are written */
    for (uint32_t i = 0; i < at__ring.block_count; i++) {
        if (claim(at__ring_block(i)))
            w.claimed[n++] = at__ring_block(i);
        if (n == batch_blocks()) {
            write_claimed(n);
            n = 0;
        }
    }
    write_claimed(n);
    flush();
}

/* Prepares blocks ahead of the threads' need (ring.c), and tells the threads waiting. Returns
 * whether it did: then the writer makes another pass at once, for threads still short of a
 * block (two thousand starting at once need many steps). */
static int grow_ring(uint32_t free_seen)
{
    uint32_t more;
    PHASE(PHASE_GROW, more = at__ring_grow(free_seen));
    if (more > 0)
        wake_free_waiters(more);
    return more > 0;
}

/* Clock samples: one 1 ms after the start, so that the ring file holds two (and with them the
 * tick rate) from then on, even if the process is killed before its first drain; one at 50 ms,
 * for a better rate in a short run; then one a second. Each also goes into the ring's header. */
static void maybe_clock(void)
{
    uint64_t now = at__clock_ns(CLOCK_MONOTONIC);
    if (now < w.next_clock_ns)
        return;
    w.clock_due = 1;
    w.next_clock_ns = now + (w.clock_samples++ == 0 ? 49 : 1000) * 1000 * 1000ull;
}

/* Whether the writer should wake: the pool is half in use (at__writer_submit's test). */
static int pool_half_used(void)
{
    /* relaxed: a heuristic; block_count grows (ring.c) */
    return __atomic_load_n(&at__ring.free_count, __ATOMIC_RELAXED) <
           __atomic_load_n(&at__ring.block_count, __ATOMIC_RELAXED) / 2;
}

/* Sleeps until a thread wakes the writer (half the pool in use, a thread waiting, the end) or
 * the poll, unless blocks were handed over since `seen` (read before the drain), which did not
 * wake it, and either a frame's worth of them or the pool is half in use. Not for every block
 * handed over: one thread recording as fast as it can hands over a block every 20 us or so,
 * and a pass for each, with a frame and a write of one or two blocks, cost the writer about a
 * third more per event. */
static void sleep_unless_pending(uint32_t seen)
{
    uint64_t now = at__clock_ns(CLOCK_MONOTONIC), wait = WRITER_POLL_NS;
    if (w.next_clock_ns > now && w.next_clock_ns - now < wait)
        wait = w.next_clock_ns - now; /* a clock sample is due before the poll */
    struct timespec timeout = {0, (long)wait};
    /* seq_cst, with at__writer_submit's increment of pending then load of sleeping: either
     * the writer sees the new pending here, or the submitter sees sleeping and wakes it */
    __atomic_store_n(&w.sleeping, 1, __ATOMIC_SEQ_CST);
    uint32_t pending = __atomic_load_n(&w.pending, __ATOMIC_SEQ_CST);
    int handed_over = pending != seen;
    if ((!handed_over || (pending - seen < frame_blocks() && !pool_half_used())) &&
        !__atomic_load_n(&w.stop, __ATOMIC_SEQ_CST))
        at__futex(&w.pending, FUTEX_WAIT_PRIVATE, pending, &timeout);
    __atomic_store_n(&w.sleeping, 0, __ATOMIC_SEQ_CST);
}

/* The last pass, or a dump: the blocks threads still hold (their committed slots, up to the
 * last one), and those handed over since drain() passed them, which one state read tells
 * apart. A block dumped goes on filling: what follows is written from where this stops. */
static void write_held_blocks(void)
{
    for (uint32_t i = 0; i < at__ring.block_count; i++) {
        struct at_ring_block *block = at__ring_block(i);
        /* acquire: pairs with at__ring_take's CAS to FILLING (the slots were cleared) */
        if (__atomic_load_n(&block->state, __ATOMIC_ACQUIRE) != AT_BLOCK_FILLING) {
            write_if_full(block);
            continue;
        }
        const struct at_event *slots = at__block_slots(block);
        uint32_t used = block->capacity;
        /* acquire: pairs with at__fill's release commit of the slot */
        while (used > 0 && __atomic_load_n(&slots[used - 1].kind, __ATOMIC_ACQUIRE) == 0)
            used--;
        write_block(block, used, 0);
        flush(); /* before `written` says the slots are in the trace */
        block->written = used;
    }
    flush();
}

/* The last META frame: overwrite mode's losses, a clock sample, the LOST record of a write
 * failure and END, encoded here into memory set aside for them (no lock, no allocation). The
 * first two are added once, by finish(); the last two each time the frame is attempted. */
#define END_RECORD_MAX (1 + 6 * AT_VARINT_MAX)
static struct {
    uint8_t data[(AT_OVERWRITTEN_THREADS + 3) * END_RECORD_MAX];
    size_t len, fixed_len;
    uint32_t count, fixed_count;
} end;

static void end_add(unsigned type, const uint64_t *fields, unsigned n)
{
    end.len += at__meta_encode(end.data + end.len, type, fields, n);
    end.count++;
}

static void end_add_lost(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                         uint64_t last_tsc)
{
    uint64_t f[] = {tid, reason, count, first_tsc, last_tsc};
    end_add(AT_META_LOST, f, 5);
}

/* Overwrite mode's losses not yet recorded, and the last clock sample. */
static void end_begin(void)
{
    struct at_lost lost[AT_OVERWRITTEN_THREADS];
    unsigned n = at__losses_take(lost, AT_OVERWRITTEN_THREADS, END_LOCK_WAIT_NS);
    for (unsigned i = 0; i < n; i++)
        end_add_lost(lost[i].tid, AT_LOST_OVERWRITTEN, lost[i].count, lost[i].first_tsc,
                     lost[i].last_tsc);
    uint64_t clock[3];
    at__meta_clock_fields(clock);
    end_add(AT_META_CLOCK, clock, 3);
    end.fixed_len = end.len;
    end.fixed_count = end.count;
}

static int write_end(void)
{
    end.len = end.fixed_len;
    end.count = end.fixed_count;
    if (w.lost)
        end_add_lost(0, AT_LOST_WRITE_ERROR, w.lost, w.lost_first_tsc, w.lost_last_tsc);
    uint64_t totals[] = {w.events_written, at__ring_lost_total() + w.lost,
                         __atomic_load_n(&at__threads_total, __ATOMIC_RELAXED), w.blocks_written};
    end_add(AT_META_END, totals, 4);
    return write_meta_frame(end.data, end.len, end.count);
}

/* After a failure: the end records are attempted in the room the last frames took, giving
 * back one frame (counted as lost) each time they do not fit. */
static void write_end_after_failure(void)
{
    while (write_end() < 0 && w.recent_count > 0) {
        cut_back(w.file_end);
        w.recent_next = (w.recent_next + RECENT_FRAMES - 1) % RECENT_FRAMES;
        w.recent_count--;
        const struct written_frame *f = &w.recent[w.recent_next];
        cut_back(f->start);
        count_lost(f->count, f->first_tsc, f->last_tsc);
        w.events_written -= f->count;
        w.blocks_written -= f->blocks;
    }
}

/* Everything left, then the end. It may run while a thread that a fatal signal or _exit
 * stopped holds malloc's lock or one of ours: it allocates and frees nothing, and waits for
 * the recorder's locks only so long (END_LOCK_WAIT_NS). */
static void finish(void)
{
    w.finishing = 1;
    uint64_t names_lost = __atomic_load_n(&at__names_lost, __ATOMIC_RELAXED);
    if (names_lost)
        at__warn("%llu names could not be kept (out of memory); their events have none",
                 (unsigned long long)names_lost);
    end_begin();
    drain(1);
    write_held_blocks();
    if (w.failed) {
        write_end_after_failure();
        return;
    }
    int err = write_end();
    if (err < 0) {
        write_failed(err);
        write_end_after_failure();
    }
}

/* ACTORTRACE_WRITER_NICE: the writer gives way to the program's threads. Raising a nice value
 * needs no privilege; lowering it again does, so it is set once, for the writer's life. */
static void lower_priority(void)
{
    if (at__config.writer_nice == 0)
        return;
    id_t self = (id_t)gettid();
    errno = 0;
    int value = getpriority(PRIO_PROCESS, self) + (int)at__config.writer_nice;
    if (errno == 0 && setpriority(PRIO_PROCESS, self, value < 19 ? value : 19) < 0)
        at__warn("ACTORTRACE_WRITER_NICE: cannot lower the writer's priority (%s)",
                 strerror(errno));
}

/* The step or lattice the clock moves on (at_tsc_lattice), from reads spaced by a varying
 * number of pauses, so that a clock that moves by one tick does not show the loop's own length
 * as a step. Where the clock moves in steps (26 ticks, 10 ns, on a VM whose clock runs at 2.6
 * GHz) or on a lattice (24 and 25 ticks in turn at 2.45 GHz), the columns take the timestamps
 * in units of it (FORMAT.md 4.3, 4.4): the timestamps are most of zstd's work and of the bytes,
 * and a quotient has fewer distinct values. About 0.2 ms, once, on the writer's thread. The
 * test copies take ACTORTRACE_TEST_TSC_LATTICE instead. */
static void measure_tsc_lattice(struct at_tsc_lattice *lattice)
{
    enum { SAMPLES = 512 };
    uint64_t samples[SAMPLES];
    for (unsigned i = 0; i < SAMPLES; i++) {
        for (unsigned pause = i % 13; pause > 0; pause--)
            __builtin_ia32_pause();
        samples[i] = at__rdtsc();
    }
    at_tsc_lattice(samples, SAMPLES, lattice);
    at__test_lattice("ACTORTRACE_TEST_TSC_LATTICE", lattice);
}

static void *writer_main(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "actortrace-w");
    lower_priority();
    measure_tsc_lattice(&w.tsc_lattice);
    __atomic_store_n(&w.lattice_ready, 1, __ATOMIC_RELEASE); /* pairs with write_group's */
    at__thread.internal = 1; /* what this thread does (futex waits, writes) is not the program's */
    w.next_clock_ns = at__clock_ns(CLOCK_MONOTONIC) + 1000 * 1000ull;
    for (;;) {
        /* read before draining: a handover after this read makes pending differ, and the
         * writer does not sleep on it (sleep_unless_pending) */
        uint32_t seen = __atomic_load_n(&w.pending, __ATOMIC_SEQ_CST);
        /* acquire: pairs with the release store in at__writer_request_dump */
        int dump = __atomic_exchange_n(&w.dump, 0, __ATOMIC_ACQ_REL);
        if (dump)
            at__meta_flush_losses();
        uint32_t free_seen = at__ring_free(); /* how late the writer came: grow_ring */
        write_taken_back();
        maybe_clock();
        drain(at__config.mode != AT_MODE_OVERWRITE || dump);
        /* after the drain, whose freed blocks the threads take first */
        int grew = grow_ring(free_seen);
        if (dump)
            write_held_blocks(); /* the newest events are in the blocks still filling */
        if (__atomic_load_n(&w.stop, __ATOMIC_ACQUIRE)) /* pairs with at__writer_stop */
            break;
        if (!grew)
            sleep_unless_pending(seen);
    }
    finish();
    report_phases();
    /* release: pairs with wait_finished's acquire load: the end is in the file */
    __atomic_store_n(&w.finished, 1, __ATOMIC_RELEASE);
    at__futex(&w.finished, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
    return NULL;
}

static int write_file_header(void)
{
    struct at_file_header fh = {.version_major = AT_FORMAT_MAJOR,
                                .version_minor = AT_FORMAT_MINOR,
                                .header_size = sizeof fh};
    memcpy(fh.magic, AT_FILE_MAGIC, AT_FILE_MAGIC_LEN);
    struct iovec iov = {&fh, sizeof fh};
    AT_RETURN_IF_ERROR(write_all(&iov, 1));
    w.file_end = sizeof fh;
    return 0;
}

/* The most memory zstd needs at `level` for an input of at most `most` bytes, compressed in
 * one call or (stream) in the buffered mode ZSTD_compressSequences uses. zstd picks its
 * parameters by the input's size, in four classes; the largest class does not always need the
 * most. */
static size_t zstd_need(int level, size_t most, int stream)
{
    static const size_t classes[] = {16u << 10, 128u << 10, 256u << 10};
    size_t need = 0;
    for (unsigned i = 0; i <= 3; i++) {
        size_t size = i < 3 && classes[i] < most ? classes[i] : most;
        ZSTD_compressionParameters p = ZSTD_getCParams(level, size, 0);
        size_t n = stream ? ZSTD_estimateCStreamSize_usingCParams(p)
                          : ZSTD_estimateCCtxSize_usingCParams(p);
        need = n > need ? n : need;
    }
    return need;
}

/* A zstd context in `size` bytes set aside now: a static one, which never allocates, so that
 * the finish allocates nothing without a frame's worth compressed ahead to make zstd size its
 * workspace (1.1 M instructions and a fault on each page of the encode buffer, at every start,
 * while the program's threads wait for their first event). The memory is touched only as
 * frames use it. */
static ZSTD_CCtx *static_cctx(void **space, size_t size)
{
    *space = malloc(size);
    return *space ? ZSTD_initStaticCCtx(*space, size) : NULL;
}

/* Allocates ahead everything the writer uses, the end included. */
static int allocate(void)
{
    w.raw_cap = at_events_encode_bound(at__ring.capacity * frame_blocks_max());
    w.cctx = static_cctx(&w.cctx_space, zstd_need(at__config.zstd_level, w.raw_cap, 0));
    w.raw = calloc(1, w.raw_cap);
    w.meta = malloc(AT_META_MAX_PENDING + END_RECORD_MAX);
    w.batch_cap = BATCH_BYTES + sizeof(struct at_frame_header) + sizeof(struct table) +
                  ZSTD_compressBound(w.raw_cap);
    w.batch = malloc(w.batch_cap);
    w.taken = calloc(at__ring.block_max, sizeof *w.taken);
    if (!w.cctx || !w.raw || !w.meta || !w.batch || !w.taken)
        return -ENOMEM;
    AT_RETURN_IF_ERROR(at_events_compression(w.cctx, at__config.zstd_level));
    /* level 1: at_events_entropy_init's */
    if (at__config.predicted &&
        (!(w.huffman = static_cctx(&w.huffman_space, zstd_need(1, w.raw_cap, 1))) ||
         at_events_entropy_init(w.huffman) < 0))
        return -ENOMEM;
    return grow(&w.packed, &w.packed_cap, ZSTD_compressBound(w.raw_cap));
}

static int start_writer(const char *trace_path)
{
    snprintf(w.path, sizeof w.path, "%s", trace_path);
    AT_RETURN_IF_ERROR(allocate());
    AT_RETURN_IF_ERROR(write_file_header());
    /* the PROCESS record and the first clock sample lead the file */
    AT_RETURN_IF_ERROR(write_meta());
    /* All signals blocked: the program's signals go to its own threads, and a write past
     * RLIMIT_FSIZE fails with EFBIG here instead of killing the process with SIGXFSZ. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Detached: nobody joins it, since the end may come in a signal handler (at__writer_stop). */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int err = pthread_create(&thread, &attr, writer_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -err;
}

int at__writer_start(int fd, const char *trace_path)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    w.fd = at__high_fd(fd);
    w.dev = st.st_dev;
    w.ino = st.st_ino;
    int err = start_writer(trace_path);
    if (w.fd != fd)
        close(err == 0 ? fd : w.fd); /* on failure the caller closes fd */
    return err;
}

void at__writer_submit(struct at_ring_block *block, uint32_t used)
{
    block->used = used;
    /* release: the slots and `used` are visible to the writer that sees FULL */
    __atomic_store_n(&block->state, AT_BLOCK_FULL, __ATOMIC_RELEASE);
    /* seq_cst: pairs with sleep_unless_pending (store sleeping, then load pending) */
    __atomic_fetch_add(&w.pending, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w.sleeping, __ATOMIC_SEQ_CST) && pool_half_used())
        at__futex(&w.pending, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void at__writer_wait_free(uint64_t timeout_ns)
{
    struct timespec timeout = {(time_t)(timeout_ns / 1000000000u),
                               (long)(timeout_ns % 1000000000u)};
    /* acquire: pairs with wake_free_waiters' release increment of freed */
    uint32_t seen = __atomic_load_n(&w.freed, __ATOMIC_ACQUIRE);
    /* seq_cst: pairs with wake_free_waiters' load of free_waiters (see there) */
    __atomic_fetch_add(&w.free_waiters, 1, __ATOMIC_SEQ_CST);
    /* acquire: pairs with at__ring_release's release increment of free_count */
    if (__atomic_load_n(&at__ring.free_count, __ATOMIC_ACQUIRE) == 0)
        at__futex(&w.freed, FUTEX_WAIT_PRIVATE, seen, &timeout);
    __atomic_fetch_sub(&w.free_waiters, 1, __ATOMIC_SEQ_CST);
}

uint32_t at__writer_pool_moves(void)
{
    /* relaxed: a sign of progress; which block is free, at__ring_take finds */
    return __atomic_load_n(&w.freed, __ATOMIC_RELAXED);
}

void at__writer_wake(void)
{
    __atomic_fetch_add(&w.pending, 1, __ATOMIC_SEQ_CST); /* as in at__writer_submit */
    at__futex(&w.pending, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Async-signal-safe: a flag and a futex wake. */
void at__writer_request_dump(void)
{
    __atomic_store_n(&w.dump, 1, __ATOMIC_RELEASE); /* pairs with writer_main's exchange */
    at__writer_wake();
}

static int wait_finished(uint64_t timeout_ns)
{
    uint64_t deadline =
        timeout_ns == AT_WAIT_FOREVER ? UINT64_MAX : at__clock_ns(CLOCK_MONOTONIC) + timeout_ns;
    /* acquire: pairs with writer_main's release store of finished */
    while (!__atomic_load_n(&w.finished, __ATOMIC_ACQUIRE)) {
        uint64_t now = at__clock_ns(CLOCK_MONOTONIC);
        if (now >= deadline)
            return -ETIMEDOUT;
        uint64_t left = deadline - now < 1000000000u ? deadline - now : 1000000000u;
        struct timespec ts = {0, (long)left};
        if (left == 1000000000u)
            ts = (struct timespec){1, 0};
        at__futex(&w.finished, FUTEX_WAIT_PRIVATE, 0, &ts);
    }
    return 0;
}

/* The file, the buffers and the zstd context stay: the process is ending (an exec closes the
 * file, O_CLOEXEC), and freeing could wait for a lock a stopped thread holds. */
int at__writer_stop(uint64_t timeout_ns)
{
    /* release: pairs with the writer's acquire load of stop, after which it finishes */
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    /* bumped so that a writer about to sleep on `pending` sees a change and does not */
    __atomic_fetch_add(&w.pending, 1, __ATOMIC_SEQ_CST);
    at__futex(&w.pending, FUTEX_WAKE_PRIVATE, 1, NULL);
    return wait_finished(timeout_ns);
}

int at__writer_finished(void)
{
    /* acquire: pairs with writer_main's release store of finished */
    return (int)__atomic_load_n(&w.finished, __ATOMIC_ACQUIRE);
}

/* In a forked child: the writer thread did not come along; the file and its offset are the
 * parent's. Close our copy of the descriptor and start from nothing. */
void at__writer_after_fork(void)
{
    if (is_trace_file(w.fd))
        close(w.fd);
    free(w.cctx_space); /* static contexts: their memory is all there is to free */
    free(w.huffman_space);
    free(w.raw);
    free(w.packed);
    free(w.batch);
    free(w.meta);
    free(w.taken);
    memset(&w, 0, sizeof w);
    w.fd = -1;
}
