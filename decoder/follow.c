/* Reading traces that grow (follow.h).
 *
 * Each poll maps what a file has gained and reads the frames after the last one read, with
 * the reader's checks (reader.c). A frame that runs past the end of the file is being written,
 * or the file is cut: it is read again on the next poll. A frame that fails a check at the end
 * of what was written may have been caught half-written (the kernel lets a reader see a
 * write's bytes before the write is over): it counts as damage only when it fails again on
 * the next poll; the reader then resumes at the next frame magic, as a decode does. An EVENTS
 * frame is decoded at once into its thread's queue and its index entry dropped, so that memory
 * stays what is queued, whatever the length of the run.
 *
 * With --ring the blocks of the ring file that threads are filling or have handed over (never
 * those the writer is writing: it clears them once written) are read too, each slot once, and
 * their events queued marked "ring". When the block's frame reaches the file, the events
 * already handed out from it are skipped: each event is queued once, from the ring or from the
 * file. A block read while its state, thread or seq changed is read again on the next poll.
 * Nothing is written to the ring: the writer and the program never see the follower.
 *
 * Events are released in time order up to the last clock sample written: below it their
 * ts_ns is what a decode of the whole trace gives (the conversion is piecewise linear between
 * samples) and their names were written before it. A file ends at its END record, or when
 * its process is gone (then what the file holds is read once more). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "at_format.h"
#include "follow.h"
#include "order.h"
#include "stacks.h"

int at__follow_init(struct follower *f, const char *const *paths, size_t n, bool ring, FILE *diag)
{
    *f = (struct follower){.ring = ring, .budget = {UINT64_MAX / 2}};
    f->d.diag = diag;
    f->d.traces = calloc(n ? n : 1, sizeof *f->d.traces);
    f->files = calloc(n ? n : 1, sizeof *f->files);
    if (!f->d.traces || !f->files)
        return -ENOMEM;
    f->d.ntraces = n;
    for (size_t i = 0; i < n; i++) {
        f->d.traces[i] = (struct trace){.path = paths[i], .diag = diag};
        f->files[i].fd = -1;
        f->files[i].ring.fd = -1;
    }
    return 0;
}

/* ---- The file ------------------------------------------------------------------------------ */

/* Maps what the file holds now. Returns 1 when it grew, 0 when not, or a negative errno. */
static int map_more(struct trace *t, struct follow_file *ff)
{
    if (ff->fd < 0 && (ff->fd = open(t->path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat st;
    if (fstat(ff->fd, &st) < 0)
        return -errno;
    if ((size_t)st.st_size == t->size || st.st_size == 0)
        return 0;
    /* smaller: a writer that failed cut its file back to its last whole frame; the pages
     * past the end must not be touched */
    bool grew = (size_t)st.st_size > t->size;
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, ff->fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    if (t->mapped)
        munmap((void *)t->data, t->size);
    t->data = p;
    t->size = (size_t)st.st_size;
    t->mapped = true;
    if (ff->pos > t->size)
        ff->pos = t->size;
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    return grew;
}

static struct follow_queue *queue_of(struct follow_file *ff, size_t index)
{
    if (at__array_reserve_zeroed((void **)&ff->queues, &ff->nqueues, index, sizeof *ff->queues))
        return NULL;
    return &ff->queues[index];
}

static int enqueue(struct follow_queue *q, const struct at_event *ev, size_t n, bool ring)
{
    if (q->head > 0 && q->head == q->n)
        q->head = q->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (at__array_reserve((void **)&q->q, &q->cap, q->n, sizeof *q->q) < 0)
            return -ENOMEM;
        q->q[q->n++] = (struct queued){ev[i], ring};
    }
    return 0;
}

/* Events of the block f already handed out from the ring, which its frame repeats. */
static uint32_t taken_from_ring(struct follow_file *ff, uint32_t tid, const struct frame_ref *f,
                                struct follow_queue *q)
{
    struct hkey key = {tid, f->seq};
    uint32_t *taken = at__hmap_get(&ff->ring.taken, key);
    uint32_t n = taken ? *taken : 0;
    at__hmap_del(&ff->ring.taken, key);
    at__hmap_del(&ff->ring.slots, key);
    if (q->open && q->open_seq == f->seq)
        q->open = false;
    if (!q->in_file || f->seq > q->file_seq)
        q->file_seq = f->seq;
    q->in_file = true;
    return n;
}

/* Decodes the blocks the last frames added to a thread's list into its queue, then forgets
 * them. */
static int decode_thread(struct follower *f, struct trace *t, struct follow_file *ff, size_t i)
{
    struct thread *th = &t->threads[i];
    struct follow_queue *q = queue_of(ff, i);
    if (!q)
        return -ENOMEM;
    for (size_t j = 0; j < th->nframes; j++) {
        const struct frame_ref *fr = &th->frames[j];
        const char *why = "";
        int err = at__block_decode(&f->d.unpacker, t, fr, &f->scratch, &f->scratch_cap, &f->budget,
                                   0, &why);
        if (err == -ENOMEM)
            return err;
        if (err < 0) {
            at__trace_damage(t, fr->offset, why);
            continue;
        }
        uint32_t skip = taken_from_ring(ff, th->tid, fr, q);
        if (skip < fr->count && enqueue(q, f->scratch + skip, fr->count - skip, false) < 0)
            return -ENOMEM;
    }
    th->nframes = 0;
    return 0;
}

static int decode_new(struct follower *f, struct trace *t, struct follow_file *ff)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        int err = t->threads[i].nframes ? decode_thread(f, t, ff, i) : 0;
        if (err < 0)
            return err;
    }
    return 0;
}

/* A frame that failed a check: waited for while it may still be being written. Returns 1 to
 * wait, 0 when it was reported as damage (ff->pos moved on). */
static int failed_frame(struct trace *t, struct follow_file *ff, const char *why, bool cut,
                        bool final)
{
    if (cut && final) {
        t->cut = true;
        t->whole_end = ff->pos;
        at__trace_warn(t, "the frame at offset %zu is cut: %s", ff->pos, why);
        ff->pos = t->size;
        return 1;
    }
    if (cut || (ff->suspect != ff->pos && !final)) {
        ff->suspect = cut ? 0 : ff->pos;
        return 1;
    }
    at__trace_damage(t, ff->pos, why);
    ff->pos = at__frame_resync(t, ff->pos + 1);
    ff->suspect = 0;
    return 0;
}

static int read_frames(struct follower *f, struct trace *t, struct follow_file *ff, bool final)
{
    while (ff->pos < t->size) {
        struct at_frame_header h;
        bool cut;
        const char *why = at__frame_check(t, ff->pos, &h, &cut);
        if (why && failed_frame(t, ff, why, cut, final))
            break;
        if (why)
            continue;
        ff->suspect = 0;
        int err = at__frame_load(t, ff->pos, &h, &f->d.unpacker);
        if (err == 0)
            err = decode_new(f, t, ff);
        if (err < 0)
            return err;
        ff->pos += h.header_size + (size_t)h.payload_size;
        if (t->end.seen)
            break;
    }
    return 0;
}

static int start_file(struct trace *t, struct follow_file *ff)
{
    if (ff->started || t->size < sizeof(struct at_file_header))
        return 0;
    int err = at__trace_check_header(t, &ff->pos);
    ff->started = err == 0;
    return err;
}

/* The conversion, rebuilt when samples came. */
static int update_clock(struct trace *t, struct follow_file *ff)
{
    if (t->nsamples == ff->nsamples)
        return 0;
    ff->nsamples = t->nsamples;
    at__clock_free(&t->clock);
    return at__clock_init(&t->clock, t->samples, t->nsamples);
}

/* ---- The ring file --------------------------------------------------------------------------- */

static void ring_unmap(struct follow_ring *r)
{
    if (r->data)
        munmap((void *)r->data, r->size);
    r->data = NULL;
    r->size = 0;
}

static void ring_close(struct follow_ring *r)
{
    ring_unmap(r);
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

/* Maps the ring file the PROCESS record names (kept open), again when it grew. Returns 0 when
 * it is usable, -1 when not (now, or for good once it is removed: r->gone). */
static int ring_map(const struct trace *t, struct follow_ring *r)
{
    if (r->gone || !t->process.known || !t->process.ring_path[0])
        return -1;
    if (r->fd < 0 && (r->fd = open(t->process.ring_path, O_RDONLY | O_CLOEXEC)) < 0) {
        r->gone = true;
        return -1;
    }
    struct stat st;
    if (fstat(r->fd, &st) < 0 || st.st_nlink == 0) {
        r->gone = true;
        return -1;
    }
    if ((size_t)st.st_size != r->size && (size_t)st.st_size >= sizeof(struct at_ring_header)) {
        ring_unmap(r);
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, r->fd, 0);
        if (p != MAP_FAILED) {
            r->data = p;
            r->size = (size_t)st.st_size;
        }
    }
    const struct at_ring_header *h = (const void *)r->data;
    if (!r->data || memcmp(h->magic, AT_RING_MAGIC, sizeof h->magic) != 0 ||
        h->pid != t->process.pid || h->block_size < sizeof(struct at_ring_block))
        return -1;
    return 0;
}

/* A ring block seen in one state: FILLING or FULL. */
struct seen_block {
    const struct at_ring_block *b;
    uint32_t state, tid, seq, capacity;
};

static bool same_block(const struct seen_block *s)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the slots were read before this */
    return __atomic_load_n(&s->b->state, __ATOMIC_ACQUIRE) == s->state &&
           __atomic_load_n(&s->b->tid, __ATOMIC_RELAXED) == s->tid &&
           __atomic_load_n(&s->b->seq, __ATOMIC_RELAXED) == s->seq;
}

/* Reads the committed slots of a block from where the last read stopped: up to the first
 * uncommitted one while it fills, every committed one up to `used` once it is full. Returns
 * the events queued, or -ENOMEM; nothing when the block changed under the read. */
static int ring_read_block(struct follower *f, struct follow_file *ff, struct follow_queue *q,
                           const struct seen_block *s)
{
    struct hkey key = {s->tid, s->seq};
    uint32_t *at = at__hmap_get(&ff->ring.slots, key);
    uint32_t from = at ? *at : 0, end = s->capacity, n = 0;
    if (s->state == AT_BLOCK_FULL && s->b->used < end)
        end = s->b->used;
    const struct at_event *slots = (const struct at_event *)(s->b + 1);
    if (end <= from) /* nothing new; or the writer gave the block back since (used 0) */
        return 0;
    if (at__array_reserve((void **)&f->scratch, &f->scratch_cap, end - from, sizeof *f->scratch))
        return -ENOMEM;
    uint32_t i = from;
    for (; i < end; i++) {
        if (__atomic_load_n(&slots[i].kind, __ATOMIC_ACQUIRE) != 0)
            f->scratch[n++] = slots[i];
        else if (s->state == AT_BLOCK_FILLING)
            break;
    }
    if (!same_block(s) || i == from)
        return 0;
    uint32_t *taken = at__hmap_get(&ff->ring.taken, key);
    uint32_t before = taken ? *taken : 0;
    if (at__hmap_put(&ff->ring.slots, key, i) < 0 ||
        at__hmap_put(&ff->ring.taken, key, before + n) < 0 || enqueue(q, f->scratch, n, true))
        return -ENOMEM;
    q->open = true;
    q->open_seq = s->seq;
    return (int)n;
}

static int by_thread_seq(const void *a, const void *b)
{
    const struct seen_block *x = a, *y = b;
    int c = at__order(x->tid, y->tid);
    return c ? c : at__order(x->seq, y->seq);
}

/* The blocks holding events not in the file, by thread and seq. Returns their count or
 * -ENOMEM; *out is allocated. */
static int ring_blocks(const struct follow_ring *r, struct seen_block **out)
{
    const struct at_ring_header *h = (const void *)r->data;
    uint32_t count = __atomic_load_n(&h->block_count, __ATOMIC_ACQUIRE);
    if (count > (r->size - sizeof *h) / h->block_size)
        count = (uint32_t)((r->size - sizeof *h) / h->block_size);
    struct seen_block *seen = malloc((count ? count : 1) * sizeof *seen);
    if (!seen)
        return -ENOMEM;
    size_t n = 0, room = (h->block_size - sizeof(struct at_ring_block)) / sizeof(struct at_event);
    for (uint32_t i = 0; i < count; i++) {
        const struct at_ring_block *b =
            (const void *)(r->data + sizeof *h + (size_t)i * h->block_size);
        struct seen_block s = {b, __atomic_load_n(&b->state, __ATOMIC_ACQUIRE), b->tid, b->seq,
                               b->capacity < room ? b->capacity : (uint32_t)room};
        if ((s.state == AT_BLOCK_FILLING || s.state == AT_BLOCK_FULL) && s.tid != 0 &&
            b->written == 0)
            seen[n++] = s;
    }
    qsort(seen, n, sizeof *seen, by_thread_seq);
    *out = seen;
    return (int)n;
}

/* Whether a ring block is to be left for now: its frame is in the file already, or a block of
 * the thread read in part has left the ring (its frame is on its way to the file) while this
 * later one is there: it waits, so that the thread's events stay in their order. */
static bool must_wait(const struct follow_queue *q, const struct seen_block *seen, size_t n,
                      size_t i)
{
    if (q->in_file && seen[i].seq <= q->file_seq)
        return true; /* a block the writer wrote at the end while it was still filling */
    if (!q->open || seen[i].seq == q->open_seq)
        return false;
    for (size_t j = 0; j < n; j++)
        if (seen[j].tid == seen[i].tid && seen[j].seq == q->open_seq)
            return false;
    return true;
}

static int read_ring(struct follower *f, struct trace *t, struct follow_file *ff)
{
    if (ring_map(t, &ff->ring) < 0)
        return 0;
    struct seen_block *seen;
    int n = ring_blocks(&ff->ring, &seen);
#ifdef AT_TEST_HOOKS
    /* ACTORTRACE_TEST_FOLLOW_PAUSE_MS: a pause between seeing the blocks and reading them, in
     * which the writer writes and gives back the full ones (tests/e2e/live.sh) */
    const char *pause = getenv("ACTORTRACE_TEST_FOLLOW_PAUSE_MS");
    if (pause)
        usleep((useconds_t)atoi(pause) * 1000);
#endif
    for (int i = 0; i < n; i++) {
        struct thread *th = at__trace_thread(t, seen[i].tid);
        struct follow_queue *q = th ? queue_of(ff, (size_t)(th - t->threads)) : NULL;
        if (!q) {
            n = -ENOMEM;
            break;
        }
        if (!must_wait(q, seen, (size_t)n, (size_t)i) && ring_read_block(f, ff, q, &seen[i]) < 0) {
            n = -ENOMEM;
            break;
        }
    }
    if (n >= 0)
        free(seen);
    return n < 0 ? n : 0;
}

/* ---- Polling --------------------------------------------------------------------------------- */

/* Whether the process that writes the trace is gone: it was known and is not running. */
static bool writer_gone(const struct trace *t)
{
    return t->process.known && !at__process_running(t->process.pid, 0);
}

static int poll_file(struct follower *f, struct trace *t, struct follow_file *ff, bool final)
{
    int grew = map_more(t, ff);
    /* asked only when the file did not grow, and then it is read again: what the process
     * wrote before it went is read */
    bool gone = grew == 0 && writer_gone(t);
    if (gone)
        grew = map_more(t, ff);
    int err = grew < 0 ? grew : start_file(t, ff);
    if (err == 0 && ff->started)
        err = read_frames(f, t, ff, final || gone);
    if (err == 0)
        err = update_clock(t, ff);
    if (err == 0 && f->ring && !t->end.seen && !gone)
        err = read_ring(f, t, ff);
    if (err < 0)
        return err;
    ff->ended = t->end.seen || (gone && ff->started);
    if (ff->ended)
        ring_close(&ff->ring);
    return 0;
}

int at__follow_poll(struct follower *f, bool final)
{
    bool all_ended = true;
    for (size_t i = 0; i < f->d.ntraces; i++) {
        struct follow_file *ff = &f->files[i];
        int err = ff->ended ? 0 : poll_file(f, &f->d.traces[i], ff, final);
        if (err < 0) {
            if (err != -EBADMSG && err != -ENOTSUP)
                at__trace_warn(&f->d.traces[i], "%s", strerror(-err));
            return err;
        }
        all_ended &= ff->ended;
    }
    return all_ended;
}

/* ---- Release ---------------------------------------------------------------------------- */

/* One thread's events that may go now: q->q[head..limit). */
struct releasing {
    size_t file, thread, limit;
    size_t hint;
    uint64_t ns, tsc;
};

/* The events of a queue at or before the last clock sample (all: everything). */
static size_t release_limit(const struct trace *t, const struct follow_queue *q, bool all)
{
    if (all)
        return q->n;
    uint64_t last = t->clock.n ? t->clock.samples[t->clock.n - 1].tsc : 0;
    size_t i = q->head;
    while (i < q->n && q->q[i].ev.tsc <= last)
        i++;
    return i;
}

static void set_key(struct follower *f, struct releasing *r)
{
    const struct follow_queue *q = &f->files[r->file].queues[r->thread];
    r->tsc = q->q[q->head].ev.tsc;
    r->ns = at__clock_ns(&f->d.traces[r->file].clock, r->tsc, &r->hint);
}

/* The threads with events to release. Returns their count or -ENOMEM; *out is allocated. */
static long gather(struct follower *f, bool all, struct releasing **out)
{
    size_t n = 0, cap = 0;
    *out = NULL;
    for (size_t i = 0; i < f->d.ntraces; i++) {
        struct follow_file *ff = &f->files[i];
        for (size_t j = 0; j < ff->nqueues; j++) {
            size_t limit = release_limit(&f->d.traces[i], &ff->queues[j], all || ff->ended);
            if (limit == ff->queues[j].head)
                continue;
            if (at__array_reserve((void **)out, &cap, n, sizeof **out) < 0)
                return -ENOMEM;
            (*out)[n] = (struct releasing){.file = i, .thread = j, .limit = limit};
            set_key(f, &(*out)[n++]);
        }
    }
    return (long)n;
}

static size_t earliest(const struct releasing *r, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (r[i].ns < r[best].ns || (r[i].ns == r[best].ns && r[i].tsc < r[best].tsc))
            best = i;
    return best;
}

static int emit_one(struct follower *f, const struct releasing *r, follow_emit emit, void *ctx)
{
    struct trace *t = &f->d.traces[r->file];
    const struct queued *qe =
        &f->files[r->file].queues[r->thread].q[f->files[r->file].queues[r->thread].head];
    struct merged e = {.trace = t,
                       .thread = &t->threads[r->thread],
                       .ev = &qe->ev,
                       .ts_ns = r->ns,
                       .ring = qe->ring};
    t->events_decoded++;
    if (at__decode_companion(&e, &f->counts))
        return 0;
    f->counts.events++;
    return emit(ctx, &f->d, &e);
}

int at__follow_release(struct follower *f, bool all, follow_emit emit, void *ctx)
{
    struct releasing *r;
    long n = gather(f, all, &r);
    int err = n < 0 ? (int)n : 0;
    while (err == 0 && n > 0) {
        size_t i = earliest(r, (size_t)n);
        struct follow_queue *q = &f->files[r[i].file].queues[r[i].thread];
        err = emit_one(f, &r[i], emit, ctx);
        if (++q->head < r[i].limit)
            set_key(f, &r[i]);
        else
            r[i] = r[--n];
    }
    free(r);
    return err;
}

uint64_t at__follow_pending(const struct follower *f)
{
    uint64_t n = 0;
    for (size_t i = 0; i < f->d.ntraces; i++)
        for (size_t j = 0; j < f->files[i].nqueues; j++)
            n += f->files[i].queues[j].n - f->files[i].queues[j].head;
    return n;
}

void at__follow_free(struct follower *f)
{
    for (size_t i = 0; f->files && i < f->d.ntraces; i++) {
        struct follow_file *ff = &f->files[i];
        for (size_t j = 0; j < ff->nqueues; j++)
            free(ff->queues[j].q);
        free(ff->queues);
        ring_close(&ff->ring);
        at__hmap_free(&ff->ring.slots);
        at__hmap_free(&ff->ring.taken);
        if (ff->fd >= 0)
            close(ff->fd);
    }
    free(f->files);
    free(f->scratch);
    at__decode_close(&f->d);
    *f = (struct follower){0};
}
