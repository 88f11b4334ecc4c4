/* One decoding session: open every trace, hand its threads and the merged events to the output
 * format, then total the losses into the summary and decide the exit status. */
#include <errno.h>
#include <stdlib.h>

#include "clocks.h"
#include "decode.h"
#include "merge.h"
#include "progress.h"
#include "sockets.h"
#include "stacks.h"

/* Whether b is a trace already open as a: the same file (or standard input twice), or a copy
 * of it (the same process and the same first clock sample, which the recorder takes at its
 * start: a forked child or an exec'd image has its own). Merging a trace with itself would
 * show every event twice. */
static const char *repeats(const struct trace *a, const struct trace *b)
{
    if (a->dev == b->dev && a->ino == b->ino)
        return "is the same file as";
    if (!a->process.known || !b->process.known || a->process.pid != b->process.pid ||
        a->clock.n == 0 || b->clock.n == 0)
        return NULL;
    const struct clock_sample *x = &a->clock.samples[0], *y = &b->clock.samples[0];
    return x->tsc == y->tsc && x->real_ns == y->real_ns ? "is a copy of" : NULL;
}

static int check_repeated(const struct decode *d, const struct trace *t)
{
    for (size_t i = 0; i < d->ntraces; i++) {
        const char *why = repeats(&d->traces[i], t);
        if (why) {
            if (d->diag)
                fprintf(d->diag, "tracedecode: %s %s %s: give each trace once\n", t->path, why,
                        d->traces[i].path);
            return -EEXIST;
        }
    }
    return 0;
}

int at__decode_open(struct decode *d, const char *const *paths, size_t n, FILE *diag)
{
    *d = (struct decode){.diag = diag};
    d->traces = calloc(n ? n : 1, sizeof *d->traces);
    if (!d->traces)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int err = at__trace_open(&d->traces[i], paths[i], diag, &d->unpacker);
        if (err == 0 && (err = check_repeated(d, &d->traces[i])) < 0)
            at__trace_close(&d->traces[i]);
        if (err < 0) {
            at__decode_close(d);
            return err;
        }
        d->ntraces++;
    }
    return 0;
}

static int each_thread(struct decode *d, const struct output_ops *ops, struct out *o)
{
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct trace *t = &d->traces[i];
        for (size_t j = 0; j < t->nthreads; j++) {
            int err = ops->thread(o, d, t, &t->threads[j]);
            if (err < 0)
                return err;
        }
    }
    return 0;
}

static uint64_t recorded(const struct decode *d)
{
    uint64_t n = 0;
    for (size_t i = 0; i < d->ntraces; i++)
        for (size_t j = 0; j < d->traces[i].nthreads; j++)
            n += d->traces[i].threads[j].events;
    return n;
}

/* A "stack" companion attaches its stack to the event it precedes (the filters see that event
 * only); the summary counts the events given a stack, not the companions: one whose event
 * the recorder dropped gives nothing. */
bool at__decode_companion(struct merged *e, struct summary *s)
{
    if (at__stacks_pair(e))
        return true;
    s->stacks += e->stack != 0;
    s->stacks_skipped += e->stack == AT_STACK_SKIPPED;
    return false;
}

/* Whether the event carries a name the --names file gave. */
static bool uses_given_name(const struct merged *e)
{
    const struct names *nm = &e->trace->names;
    const struct at_event *ev = e->ev;
    const struct name *msg = ev->name ? at__names_get(nm, AT_NAME_MSG, ev->name) : NULL;
    const struct name *actor = ev->actor ? at__names_get(nm, AT_NAME_ACTOR, ev->actor) : NULL;
    const struct name *peer = ev->peer ? at__names_get(nm, AT_NAME_ACTOR, ev->peer) : NULL;
    return (msg && msg->given) || (actor && actor->given) || (peer && peer->given);
}

/* A --names file none of whose names any event carries was likely meant for another program,
 * or numbers its messages otherwise: said on diag. */
static void check_names_used(const struct decode *d)
{
    if (d->names_path && d->names_given && !d->names_used && d->diag)
        fprintf(d->diag,
                "tracedecode: %s: none of its %llu names is carried by an event of the trace\n",
                d->names_path, (unsigned long long)d->names_given);
}

static int each_event(struct decode *d, const struct output_ops *ops, struct out *o,
                      struct summary *sum)
{
    struct merge m;
    struct merged e;
    struct progress p;
    uint64_t seen = 0;
    at__progress_start(&p, d->progress ? d->diag : NULL, recorded(d));
    int err = at__merge_init(&m, d->traces, d->ntraces, &d->unpacker);
    if (err == 0 && d->jobs > 1)
        at__merge_prefetch(&m); /* without the helper, the merge decodes by itself */
    while (err == 0 && (err = at__merge_next(&m, &e)) > 0) {
        at__progress_tick(&p, ++seen);
        err = 0;
        if (at__decode_companion(&e, sum))
            continue;
        at__sockets_apply(d, &e);
        if (d->names_given && !d->names_used)
            d->names_used = uses_given_name(&e);
        if (d->filter && !at__filter_match(d->filter, &e))
            continue;
        sum->events++;
        err = ops->event ? ops->event(o, d, &e) : 0;
        if (err == 0)
            err = o->error; /* a full disk ends the work, not only the output */
    }
    at__progress_end(&p);
    at__merge_free(&m);
    return err;
}

/* Events the recorder lost: its LOST records, or the END record's total when that is larger
 * (threads still dropping when the process ended had no chance to write a LOST record). */
static uint64_t trace_lost(const struct trace *t)
{
    uint64_t lost = 0;
    for (size_t j = 0; j < t->nlost; j++)
        lost += t->lost[j].count;
    if (t->end.seen && t->end.events_dropped > lost)
        lost = t->end.events_dropped;
    return lost;
}

struct summary at__decode_summary(const struct decode *d, struct summary s)
{
    s.files = d->ntraces;
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct trace *t = &d->traces[i];
        s.threads += t->nthreads;
        s.damaged_frames += t->damaged;
        s.torn += t->torn;
        s.recovered += t->recovered_events;
        s.truncated |= t->cut || !t->end.seen;
        s.dropped += trace_lost(t);
    }
    return s;
}

/* Reports the recorder's own loss counts, and checks the END record against what was decoded.
 * Returns 1 when events are missing, 0 otherwise. */
static int check_trace(const struct trace *t)
{
    uint64_t lost = trace_lost(t);
    if (lost)
        at__trace_warn(t, "the recorder lost %llu events (listed in the summary)",
                       (unsigned long long)lost);
    if (t->torn)
        at__trace_warn(t, "%llu event slots were never committed (torn)",
                       (unsigned long long)t->torn);
    if (!t->end.seen || t->end.events_written == t->events_decoded)
        return 0;
    at__trace_warn(t, "the END record counts %llu events written; %llu were decoded",
                   (unsigned long long)t->end.events_written,
                   (unsigned long long)t->events_decoded);
    return t->events_decoded < t->end.events_written;
}

int at__decode_run(struct decode *d, const struct output_ops *ops, struct out *o, struct summary *s)
{
    struct summary counts = {0};
    d->state = NULL;
    if (ops->create && !(d->state = ops->create(d)))
        return -ENOMEM;
    int err = ops->begin ? ops->begin(o, d) : 0;
    if (err == 0 && ops->thread)
        err = each_thread(d, ops, o);
    if (err == 0)
        err = at__sockets_prepare(d);
    if (err == 0)
        err = at__clocks_correct(d);
    if (err == 0)
        err = each_event(d, ops, o, &counts);
    at__sockets_free(d);
    if (err == 0)
        check_names_used(d);
    struct summary sum = at__decode_summary(d, counts);
    int status = sum.truncated || sum.damaged_frames > 0;
    /* after an output error the merge stopped early: the counts say nothing about the traces */
    for (size_t i = 0; i < d->ntraces && err == 0; i++)
        status |= check_trace(&d->traces[i]);
    if (err == 0 && ops->end)
        err = ops->end(o, d, &sum);
    if (ops->destroy)
        ops->destroy(d->state);
    d->state = NULL;
    if (s)
        *s = sum;
    return err < 0 ? err : status;
}

void at__decode_close(struct decode *d)
{
    at__clocks_free(d);
    for (size_t i = 0; i < d->ntraces; i++)
        at__trace_close(&d->traces[i]);
    free(d->traces);
    at__unpacker_free(&d->unpacker);
    *d = (struct decode){0};
}
