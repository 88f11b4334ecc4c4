/* The live model (live.h).
 *
 * Mailbox depth follows the stats view's rule (match.c) for the runtimes whose send and recv
 * name the receiver: a send adds one to its receiver's mailbox, a recv takes one out; where a
 * runtime records no recv, the handler's begin takes it. The depth shown for a second is the
 * largest it reached in that second, which is what the stats view's max_depth gives for the
 * run cut at the end of that second while the mailbox grows. A handler's time counts for the
 * second it ran in, split at the boundary; its length counts for the percentile of the second
 * it ended in. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "array.h"
#include "at_events.h"
#include "live.h"

int at__live_init(struct live *l, size_t ntraces)
{
    *l = (struct live){.second = 1, .ntraces = ntraces};
    l->takes_by_recv = calloc(ntraces ? ntraces : 1, sizeof *l->takes_by_recv);
    return l->takes_by_recv ? 0 : -ENOMEM;
}

static struct live_actor *actor_of(struct live *l, uint32_t trace, uint64_t id)
{
    struct hkey key = {trace, id};
    uint32_t *found = at__hmap_get(&l->actor_index, key);
    if (found)
        return &l->actors[*found];
    if (at__array_reserve((void **)&l->actors, &l->actors_cap, l->nactors, sizeof *l->actors) ||
        at__hmap_put(&l->actor_index, key, (uint32_t)l->nactors) < 0)
        return NULL;
    l->actors[l->nactors] = (struct live_actor){.trace = trace, .id = id};
    return &l->actors[l->nactors++];
}

static struct live_worker *worker_of(struct live *l, uint32_t trace, uint32_t tid)
{
    struct hkey key = {trace, tid};
    uint32_t *found = at__hmap_get(&l->worker_index, key);
    if (found)
        return &l->workers[*found];
    if (at__array_reserve((void **)&l->workers, &l->workers_cap, l->nworkers, sizeof *l->workers) ||
        at__hmap_put(&l->worker_index, key, (uint32_t)l->nworkers) < 0)
        return NULL;
    l->workers[l->nworkers] = (struct live_worker){.trace = trace, .tid = tid};
    return &l->workers[l->nworkers++];
}

/* ---- Seconds ---------------------------------------------------------------------------- */

static void close_actor(struct live_actor *a, uint64_t end)
{
    if (a->open) {
        a->now.busy_ns += end - a->busy_since;
        a->busy_since = end;
    }
    a->now.p99_ns = at__hist_percentile(&a->handlers, 0.99);
    at__hist_free(&a->handlers);
    a->now.trend = (int64_t)a->now.depth - (int64_t)a->last.depth;
    a->last = a->now;
    a->was_active = a->active || a->depth > 0 || a->open;
    a->now = (struct live_row){.depth = a->depth};
    a->active = false;
}

static void close_second(struct live *l, uint64_t end)
{
    for (size_t i = 0; i < l->nactors; i++)
        close_actor(&l->actors[i], end);
    for (size_t i = 0; i < l->nworkers; i++) {
        struct live_worker *w = &l->workers[i];
        if (w->open) {
            w->busy_ns += end - w->busy_since;
            w->busy_since = end;
        }
        w->last_busy_ns = w->busy_ns;
        w->busy_ns = 0;
    }
    l->last_events = l->events;
    l->events = 0;
    l->second++;
}

static uint64_t second_end(const struct live *l)
{
    return l->origin_ns + l->second * LIVE_SECOND;
}

void at__live_advance(struct live *l, uint64_t ns)
{
    while (l->started && !l->ended && ns >= second_end(l))
        close_second(l, second_end(l));
}

void at__live_end(struct live *l)
{
    if (l->ended || !l->started)
        return;
    close_second(l, l->last_ns);
    l->second--; /* the last second is the one just closed */
    l->ended = true;
}

/* ---- Events ----------------------------------------------------------------------------- */

static void take(struct live_actor *a)
{
    if (a->depth > 0)
        a->depth--;
}

static void handler_begins(struct live *l, struct live_actor *a, struct live_worker *w,
                           uint32_t trace, uint64_t ns)
{
    if (!l->takes_by_recv[trace])
        take(a);
    if (a->open++ == 0)
        a->begun = a->busy_since = ns;
    if (w->open++ == 0)
        w->busy_since = ns;
}

static int handler_ends(struct live_actor *a, struct live_worker *w, uint64_t ns)
{
    if (w->open && --w->open == 0)
        w->busy_ns += ns - w->busy_since;
    if (!a->open || --a->open > 0)
        return 0;
    a->now.busy_ns += ns - a->busy_since;
    return at__hist_add(&a->handlers, ns - a->begun);
}

static int on_send(struct live *l, const struct merged *e, uint32_t trace, struct live_actor *a)
{
    if (a) {
        a->now.received++;
        if (++a->depth > a->now.depth)
            a->now.depth = a->depth;
    }
    if (!e->ev->peer)
        return 0;
    struct live_actor *sender = actor_of(l, trace, e->ev->peer);
    if (!sender)
        return -ENOMEM;
    sender->now.sent++;
    sender->active = true;
    return 0;
}

static void start(struct live *l, uint64_t ns)
{
    l->started = true;
    l->origin_ns = ns;
}

int at__live_event(struct live *l, const struct decode *d, const struct merged *e)
{
    uint32_t trace = (uint32_t)(e->trace - d->traces);
    const struct at_event *ev = e->ev;
    if (!l->started)
        start(l, e->ts_ns);
    at__live_advance(l, e->ts_ns > l->origin_ns ? e->ts_ns - 1 : e->ts_ns);
    l->last_ns = e->ts_ns;
    l->events++;
    struct live_actor *a = ev->actor ? actor_of(l, trace, ev->actor) : NULL;
    struct live_worker *w = worker_of(l, trace, e->thread->tid);
    if ((ev->actor && !a) || !w)
        return -ENOMEM;
    if (a)
        a->active = true;
    switch (ev->kind) {
    case AT_EV_SEND:
        return on_send(l, e, trace, a);
    case AT_EV_RECV:
        l->takes_by_recv[trace] = true;
        if (a)
            take(a);
        return 0;
    case AT_EV_STEP_BEGIN:
        if (a)
            handler_begins(l, a, w, trace, e->ts_ns);
        return 0;
    case AT_EV_STEP_END:
        return a ? handler_ends(a, w, e->ts_ns) : 0;
    default:
        return 0;
    }
}

/* ---- Text ------------------------------------------------------------------------------- */

void at__live_actor_name(const struct live *l, const struct decode *d, const struct live_actor *a,
                         char *buf, size_t len)
{
    (void)l;
    const struct trace *t = &d->traces[a->trace];
    const struct name *n = at__names_get(&t->names, AT_NAME_ACTOR, a->id);
    int at = d->ntraces > 1 ? snprintf(buf, len, "%" PRIu64 ":", t->process.pid) : 0;
    if (n)
        snprintf(buf + at, len - (size_t)at, "%.*s", (int)n->len, n->s);
    else
        snprintf(buf + at, len - (size_t)at, "#%" PRIu64, a->id);
}

/* A duration in 6 characters: 999ns, 12.3us, 456ms, 1.23s. */
static void duration(char *buf, size_t len, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, len, "%" PRIu64 "ns", ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.2fs", (double)ns / 1e9);
}

const char at__live_heads[] =
    "ACTOR                  RECV/s    SENT/s    DEPTH   TREND   CORE%      P99";

void at__live_row(const struct live *l, const struct decode *d, const struct live_actor *a,
                  char *buf, size_t len)
{
    char name[64], p99[16];
    at__live_actor_name(l, d, a, name, sizeof name);
    duration(p99, sizeof p99, a->last.p99_ns);
    snprintf(buf, len, "%-20.20s %8" PRIu64 "  %8" PRIu64 "  %7u  %+6" PRId64 "  %5.1f%%  %7s",
             name, a->last.received, a->last.sent, a->last.depth, a->last.trend,
             (double)a->last.busy_ns * 100.0 / LIVE_SECOND, a->last.p99_ns ? p99 : "-");
}

void at__live_worker_row(const struct live *l, const struct decode *d, const struct live_worker *w,
                         char *buf, size_t len)
{
    (void)l;
    const struct trace *t = &d->traces[w->trace];
    uint32_t index;
    const struct thread *th =
        at__idmap_get(&t->thread_index, w->tid, &index) == 0 ? &t->threads[index] : NULL;
    snprintf(buf, len, "%-8u %-16.*s %5.1f%%", w->tid, th && th->name ? (int)th->name_len : 0,
             th && th->name ? th->name : "", (double)w->last_busy_ns * 100.0 / LIVE_SECOND);
}

void at__live_free(struct live *l)
{
    for (size_t i = 0; i < l->nactors; i++)
        at__hist_free(&l->actors[i].handlers);
    free(l->actors);
    free(l->workers);
    at__hmap_free(&l->actor_index);
    at__hmap_free(&l->worker_index);
    free(l->takes_by_recv);
    *l = (struct live){0};
}
