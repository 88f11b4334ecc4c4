/* The k-way merge of every thread's events onto one timeline.
 *
 * Each thread of each trace is a stream: its EVENTS frames in seq order, of which one block at
 * a time is decoded. The streams with events left sit in a binary min-heap keyed by their next
 * event. The next event of the merge is the head of the top stream; stepping past it moves to
 * the next event of that block, and the stream sinks to its new place.
 *
 * Blocks are decoded lazily. A stream whose block is used up (or that has not begun) is keyed
 * by the first_tsc of its next frame, the smallest timestamp in that frame, so a lower bound
 * of its next event: it reaches the top no later than its next event would, and only then is
 * its frame decoded (damaged ones are reported and skipped) and the stream keyed by its real
 * head, sinking to its place, or leaving the heap when the thread has nothing left. The events
 * come out in the same order as if every block were decoded at once, and memory is one
 * decoded block for each thread whose events overlap the current time, not for every thread
 * of the trace; all of it within the merge's budget (block.h).
 *
 * Within a thread the recording order is kept even where timestamps step back (a signal
 * handler that recorded between another event's slot and its rdtsc, or a migration between
 * cores whose counters differ slightly): only a stream's head is ever compared. Between
 * streams the key is (ts_ns, tsc, stream index): nanoseconds first, since with several files
 * only they share a clock; then tsc, which keeps the order of events of one file that round to
 * the same nanosecond; then the stream index (files in command-line order, threads by tid), so
 * equal times always come out in the same order. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "merge.h"
#include "prefetch.h"

static bool earlier(const struct stream *a, const struct stream *b)
{
    if (a->ns != b->ns)
        return a->ns < b->ns;
    if (a->tsc != b->tsc)
        return a->tsc < b->tsc;
    return a->index < b->index;
}

static void set_key(struct stream *s)
{
    s->tsc = s->events[s->pos].tsc;
    s->ns = at__clock_ns(&s->trace->clock, s->tsc, &s->clock_hint);
}

/* Whether the root stream s is still earlier than both its children. */
static bool on_top(const struct merge *m, const struct stream *s)
{
    return (m->nheap < 2 || earlier(s, m->heap[1])) && (m->nheap < 3 || earlier(s, m->heap[2]));
}

static void sift_down(struct merge *m, size_t i)
{
    struct stream *s = m->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= m->nheap)
            break;
        if (child + 1 < m->nheap && earlier(m->heap[child + 1], m->heap[child]))
            child++;
        if (!earlier(m->heap[child], s))
            break;
        m->heap[i] = m->heap[child];
        i = child;
    }
    m->heap[i] = s;
}

/* Decodes the stream's next frame that holds events. Returns 1, 0 when there is none left, or
 * -ENOMEM. */
static int decode_next(struct merge *m, struct stream *s)
{
    while (s->next_frame < s->thread->nframes) {
        const struct frame_ref *f = &s->thread->frames[s->next_frame++];
        const char *why = "";
        int err =
            at__block_decode(m->unpacker, s->trace, f, &s->events, &s->cap, &m->budget, 0, &why);
        if (err == -ENOMEM)
            return err;
        if (err < 0) {
            at__trace_damage(s->trace, f->offset, why);
            continue;
        }
        if (f->count > 0) {
            s->n = f->count;
            s->pos = 0;
            s->recovered = f->recovered;
            return 1;
        }
    }
    return 0;
}

/* Moves the stream to its next block, decoded here or ahead by the helper thread. */
static int next_block(struct merge *m, struct stream *s)
{
    int found = m->prefetch ? at__prefetch_next(m->prefetch, s) : decode_next(m, s);
    if (found > 0)
        set_key(s);
    return found;
}

/* Keys a stream whose block is used up by its next frame. Returns 0 when it has none. */
static int set_lazy_key(struct stream *s)
{
    if (s->next_frame >= s->thread->nframes)
        return 0;
    s->tsc = s->thread->frames[s->next_frame].first_tsc;
    s->ns = at__clock_ns(&s->trace->clock, s->tsc, &s->clock_hint);
    return 1;
}

/* The stream's blocks are not needed any more: the thread is done. */
static void release(struct merge *m, struct stream *s)
{
    if (m->prefetch)
        at__prefetch_done(m->prefetch, s);
    at__budget_give(&m->budget, s->cap * sizeof *s->events);
    free(s->events);
    s->events = NULL;
    s->cap = 0;
}

static void remove_top(struct merge *m)
{
    release(m, m->heap[0]);
    if (--m->nheap > 0) {
        m->heap[0] = m->heap[m->nheap];
        sift_down(m, 0);
    }
}

static uint64_t budget_for(const struct trace *traces, size_t n)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += traces[i].size + traces[i].recovered_len;
    return AT_BUDGET_FLOOR + AT_BUDGET_PER_TRACE_BYTE * bytes;
}

int at__merge_init(struct merge *m, struct trace *traces, size_t n, struct unpacker *u)
{
    *m = (struct merge){.unpacker = u, .budget_total = budget_for(traces, n)};
    m->budget.left = m->budget_total;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += traces[i].nthreads;
    if (total == 0)
        return 0;
    m->streams = calloc(total, sizeof *m->streams);
    m->heap = malloc(total * sizeof *m->heap);
    if (!m->streams || !m->heap) {
        at__merge_free(m);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < traces[i].nthreads; j++) {
            struct stream *s = &m->streams[m->nstreams];
            *s = (struct stream){.trace = &traces[i],
                                 .thread = &traces[i].threads[j],
                                 .index = (uint32_t)m->nstreams};
            m->nstreams++;
            if (set_lazy_key(s))
                m->heap[m->nheap++] = s;
        }
    }
    for (size_t i = m->nheap / 2; i-- > 0;)
        sift_down(m, i);
    return 0;
}

/* Steps the top stream past the event handed out last. */
static void step(struct merge *m)
{
    struct stream *s = m->heap[0];
    m->pending = 0;
    if (++s->pos < s->n) {
        set_key(s);
        if (on_top(m, s))
            return; /* most events: the stream that gave the last one gives the next */
    } else if (!set_lazy_key(s)) {
        remove_top(m);
        return;
    }
    sift_down(m, 0);
}

/* Decodes the blocks of the streams that come to the top with their block used up, until the
 * top stream has an event to give. Returns 0 or -ENOMEM. */
static int fill_top(struct merge *m)
{
    while (m->nheap > 0 && m->heap[0]->pos >= m->heap[0]->n) {
        int found = next_block(m, m->heap[0]);
        if (found < 0)
            return found;
        if (found)
            sift_down(m, 0);
        else
            remove_top(m);
    }
    return 0;
}

int at__merge_next(struct merge *m, struct merged *out)
{
    if (m->pending)
        step(m);
    int err = fill_top(m);
    if (err < 0)
        return err;
    if (m->nheap == 0)
        return 0;
    struct stream *s = m->heap[0];
    *out = (struct merged){s->trace, s->thread, &s->events[s->pos], s->ns, s->recovered, 0, false};
    s->trace->events_decoded++;
    m->pending = 1;
    return 1;
}

int at__merge_prefetch(struct merge *m)
{
    return m->nstreams ? at__prefetch_start(m) : 0;
}

void at__merge_free(struct merge *m)
{
    at__prefetch_stop(m->prefetch);
    for (size_t i = 0; i < m->nstreams; i++)
        free(m->streams[i].events);
    free(m->streams);
    free(m->heap);
    *m = (struct merge){0};
}
