/* The statistics report, written once at the end from what stats_gather.c gathered: a text report
 * for people (the busiest entries of each table, names cut short) or, with --json, one JSON
 * object with every entry for scripts. The report is small, so plain snprintf does here. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "at_events.h"
#include "at_format.h"
#include "clocks.h"
#include "order.h"
#include "stacks.h"
#include "stats.h"

#define TEXT_ROWS 20 /* rows per table in the text report */
#define TEXT_NAME 28 /* name bytes shown in the text report */
#define LINE_ROOM 1024

struct report {
    struct out *o;
    const struct decode *d;
    struct stats *st;
    const struct summary *sum;
    size_t nactors; /* in the actor orders: the actors, less each trace's unknown receiver */
    int err;
};

static void say(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct report *r, const char *fmt, ...)
{
    char *p = r->err ? NULL : at__out_reserve(r->o, LINE_ROOM);
    if (!p) {
        r->err = -ENOMEM;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p, LINE_ROOM, fmt, ap);
    va_end(ap);
    at__out_commit(r->o, p + (n < 0 ? 0 : n >= LINE_ROOM ? LINE_ROOM - 1 : n));
}

/* Writes s[0..len) as a JSON string. */
static void json_str(struct report *r, const char *s, size_t len)
{
    char *p = r->err ? NULL : at__out_reserve(r->o, at__json_str_bound(len));
    if (!p) {
        r->err = -ENOMEM;
        return;
    }
    at__out_commit(r->o, at__fmt_json_str(p, s, len));
}

/* ---- Names ------------------------------------------------------------------------------- */

static const struct name *msg_name(const struct report *r, const struct stat_msg *m)
{
    const struct names *nm = &r->d->traces[m->trace].names;
    return m->name ? at__names_get(nm, AT_NAME_MSG, m->name) : NULL;
}

static const struct name *actor_name(const struct report *r, const struct match_actor *a)
{
    return at__names_get(&r->d->traces[a->trace].names, AT_NAME_ACTOR, a->id);
}

/* A name for the text report: at most TEXT_NAME bytes, control bytes shown as '?'. */
static const char *text_name(char *buf, const struct name *n, const char *prefix, uint64_t id)
{
    if (!n) {
        snprintf(buf, TEXT_NAME + 24, "%s%llu", prefix, (unsigned long long)id);
        return buf;
    }
    size_t len = n->len < TEXT_NAME ? n->len : TEXT_NAME;
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)n->s[i] < 0x20 ? '?' : n->s[i];
    buf[len] = '\0';
    return buf;
}

/* A message name for the text report, with its process's pid when there are several (names
 * are per trace: the same name in two files is two rows). buf holds 96 bytes. */
static const char *msg_text(const struct report *r, const struct stat_msg *m, char *buf)
{
    char name[TEXT_NAME + 24];
    uint64_t number = at__names_msg_number(&r->d->traces[m->trace].names, m->name);
    const char *text = m->name ? text_name(name, msg_name(r, m), "name_", number) : AT_UNNAMED;
    if (r->d->ntraces > 1)
        snprintf(buf, 96, "%s [pid %llu]", text,
                 (unsigned long long)r->d->traces[m->trace].process.pid);
    else
        snprintf(buf, 96, "%s", text);
    return buf;
}

/* Writes "name":"..." for JSON: the registered name, or the prefix and id. */
static void json_name(struct report *r, const struct name *n, const char *prefix, uint64_t id)
{
    if (!n) {
        say(r, "\"name\":\"%s%llu\"", prefix, (unsigned long long)id);
        return;
    }
    say(r, "\"name\":");
    json_str(r, n->s, n->len);
}

static const char *duration(char *buf, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, 24, "%lluns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, 24, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, 24, "%.2fms", (double)ns / 1e6);
    else
        snprintf(buf, 24, "%.3fs", (double)ns / 1e9);
    return buf;
}

/* The name of a slot of stats.kinds. */
static const char *kind_name(const struct report *r, unsigned kind, char *buf)
{
    const char *builtin = at__kind_builtin(kind);
    if (!builtin && r->st->kind_names[kind])
        return text_name(buf, r->st->kind_names[kind], "", 0);
    if (!builtin)
        snprintf(buf, 16, "kind_%u", kind);
    return builtin ? builtin : buf;
}

/* ---- Ordering ---------------------------------------------------------------------------- */

/* The order of every ranking: the larger count x first, ties by index i. */
static int most_first(uint64_t x, uint64_t y, uint32_t i, uint32_t j)
{
    int c = at__order(y, x);
    return c ? c : at__order(i, j);
}

static int by_traffic(const void *a, const void *b, void *arg)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const struct stat_msg *x = &((const struct stats *)arg)->msgs[i];
    const struct stat_msg *y = &((const struct stats *)arg)->msgs[j];
    return most_first(x->sent + x->received + x->handled, y->sent + y->received + y->handled, i, j);
}

static int by_events(const void *a, const void *b, void *arg)
{
    const struct stats *st = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    return most_first(st->actors[i].events, st->actors[j].events, i, j);
}

static int by_depth(const void *a, const void *b, void *arg)
{
    const struct stats *st = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    return most_first(st->match.actors[i].max_depth, st->match.actors[j].max_depth, i, j);
}

static int by_sends(const void *a, const void *b, void *arg)
{
    const struct stats *st = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    return most_first(st->senders[i].sends, st->senders[j].sends, i, j);
}

/* 0..n-1 sorted by cmp; NULL on -ENOMEM. */
static uint32_t *sorted(size_t n, int (*cmp)(const void *, const void *, void *), struct stats *st)
{
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, n, sizeof *order, cmp, st);
    return order;
}

/* Removes the unknown receivers (actor id 0) from an order of actors; returns how many remain. */
static size_t real_actors(const struct stats *st, uint32_t *order)
{
    size_t kept = 0;
    for (size_t i = 0; order && i < st->match.nactors; i++)
        if (st->match.actors[order[i]].id != 0)
            order[kept++] = order[i];
    return kept;
}

/* ---- Finishing ----------------------------------------------------------------------------- */

/* Closes what was still open when the events ran out: parked threads, depth slots. */
static void finish(struct report *r)
{
    struct stats *st = r->st;
    for (size_t i = 0; i < r->d->ntraces; i++) {
        for (size_t j = 0; j < r->d->traces[i].nthreads; j++) {
            struct stat_thread *t = &st->threads[i][j];
            if (!t->parked)
                continue;
            uint64_t woken =
                t->park_actor < st->nactors ? st->actors[t->park_actor].last_unpark : 0;
            uint64_t end = woken >= t->park_since ? woken : st->last_ns;
            t->parked_ns += end > t->park_since ? end - t->park_since : 0;
            t->last_ns = end > t->last_ns ? end : t->last_ns; /* its life ends parked */
            t->parked = false;
        }
    }
    for (size_t i = 0; i < st->nactors && i < st->match.nactors; i++) {
        struct stat_actor *a = &st->actors[i];
        for (uint32_t s = a->last_slot + 1; s < STATS_SLOTS; s++)
            a->depth_slots[s] = a->depth;
        a->last_slot = STATS_SLOTS - 1;
    }
}

static struct stat_actor *stat_actor_of(struct stats *st, uint32_t i)
{
    static struct stat_actor none;
    return i < st->nactors ? &st->actors[i] : &none;
}

/* ---- Text -------------------------------------------------------------------------------- */

static void text_header(struct report *r)
{
    const struct summary *s = r->sum;
    char span[24];
    say(r, "actortrace stats: %llu events, %zu file%s, %llu threads, over %s\n",
        (unsigned long long)s->events, s->files, s->files == 1 ? "" : "s",
        (unsigned long long)s->threads, duration(span, r->st->last_ns - r->st->first_ns));
    say(r, "dropped %llu events; damaged frames %llu; torn %llu; %s\n",
        (unsigned long long)s->dropped, (unsigned long long)s->damaged_frames,
        (unsigned long long)s->torn,
        s->truncated ? "TRUNCATED: the recorder did not stop cleanly" : "complete");
    if (s->stacks)
        say(r, "call stacks on %llu events (%llu skipped)\n",
            (unsigned long long)(s->stacks - s->stacks_skipped),
            (unsigned long long)s->stacks_skipped);
}

static void text_kinds(struct report *r)
{
    char buf[TEXT_NAME + 24];
    say(r, "\nEvents by kind\n");
    for (unsigned k = 0; k < 256; k++)
        if (r->st->kinds[k])
            say(r, "  %-14s %12llu %6.1f%%\n", kind_name(r, k, buf),
                (unsigned long long)r->st->kinds[k],
                100.0 * (double)r->st->kinds[k] / (double)(r->sum->events ? r->sum->events : 1));
}

static void text_latency(struct report *r, const struct hist *h)
{
    char a[24], b[24], c[24], d[24];
    if (h->count == 0) {
        say(r, " %9s %9s %9s %9s", "-", "-", "-", "-");
        return;
    }
    say(r, " %9s %9s %9s %9s", duration(a, at__hist_percentile(h, 0.5)),
        duration(b, at__hist_percentile(h, 0.9)), duration(c, at__hist_percentile(h, 0.99)),
        duration(d, h->max));
}

static void text_msgs(struct report *r, const uint32_t *order)
{
    char name[96], busy[24];
    int width = r->d->ntraces > 1 ? 42 : 28; /* room for the pid */
    say(r, "\nMessages by name (latency: send -> the step that handled it; send -> its recv)\n");
    say(r, "  %-*s %10s %10s %10s %9s %9s %9s %9s %9s %9s %9s %9s %10s\n", width, "name", "sent",
        "received", "handled", "step p50", "p90", "p99", "max", "recv p50", "p90", "p99", "max",
        "in steps");
    for (size_t i = 0; i < r->st->nmsgs && i < TEXT_ROWS; i++) {
        const struct stat_msg *m = &r->st->msgs[order[i]];
        say(r, "  %-*s %10llu %10llu %10llu", width, msg_text(r, m, name),
            (unsigned long long)m->sent, (unsigned long long)m->received,
            (unsigned long long)m->handled);
        text_latency(r, &m->latency);
        text_latency(r, &m->recv_latency);
        say(r, " %10s\n", duration(busy, m->handling_ns));
    }
    if (r->st->nmsgs > TEXT_ROWS)
        say(r, "  ... %zu more (--json lists them all)\n", r->st->nmsgs - TEXT_ROWS);
}

/* ---- Top senders ------------------------------------------------------------------------- */

#define SENDER_TEXT 48 /* bytes of "function (module)" shown in the text report */

/* The frame that names a sender, and its module's file name ("" when none). */
static const struct stack_frame *sender_frame(const struct report *r, const struct stat_sender *s,
                                              const char **module)
{
    const struct trace *t = &r->d->traces[s->trace];
    const struct stack_frame *f = at__stacks_caller(t, s->stack);
    const struct stack_module *m = at__stacks_module(t, f->module);
    *module = m ? m->base : "";
    return f;
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

static void text_senders(struct report *r, const uint32_t *order)
{
    const struct stats *st = r->st;
    char name[SENDER_TEXT + 1];
    if (!st->sends_stacked)
        return;
    say(r,
        "\nTop senders (the function that made each send, from its call stack; %llu of %llu "
        "sends have one)\n",
        (unsigned long long)st->sends_stacked, (unsigned long long)st->sends);
    say(r, "  %-48s %10s %7s\n", "function (module)", "sends", "share");
    for (size_t i = 0; i < st->nsenders && i < TEXT_ROWS; i++) {
        const struct stat_sender *s = &st->senders[order[i]];
        const char *module;
        const struct stack_frame *f = sender_frame(r, s, &module);
        if (f->func_len)
            snprintf(name, sizeof name, "%.*s (%s)", (int)f->func_len, f->func, module);
        else
            snprintf(name, sizeof name, "0x%llx (%s)", (unsigned long long)f->addr, module);
        for (char *c = name; *c; c++)
            *c = (unsigned char)*c < 0x20 ? '?' : *c;
        say(r, "  %-48s %10llu %6.1f%%", name, (unsigned long long)s->sends,
            100.0 * share(s->sends, st->sends_stacked));
        if (r->d->ntraces > 1)
            say(r, "  pid %llu", (unsigned long long)r->d->traces[s->trace].process.pid);
        say(r, "\n");
    }
    if (st->nsenders > TEXT_ROWS)
        say(r, "  ... %zu more (--json lists them all)\n", st->nsenders - TEXT_ROWS);
}

static void json_senders(struct report *r, const uint32_t *order)
{
    const struct stats *st = r->st;
    say(r, ",\n\"senders\":{\"sends\":%llu,\"with_stack\":%llu,\"functions\":[",
        (unsigned long long)st->sends, (unsigned long long)st->sends_stacked);
    for (size_t i = 0; i < st->nsenders; i++) {
        const struct stat_sender *s = &st->senders[order[i]];
        const char *module;
        const struct stack_frame *f = sender_frame(r, s, &module);
        say(r, "%s\n{\"pid\":%llu,\"function\":", i ? "," : "",
            (unsigned long long)r->d->traces[s->trace].process.pid);
        if (f->func_len)
            json_str(r, f->func, f->func_len);
        else
            say(r, "null,\"address\":%llu", (unsigned long long)f->addr);
        say(r, ",\"module\":");
        json_str(r, module, strlen(module));
        say(r, ",\"sends\":%llu,\"share\":%.4f}", (unsigned long long)s->sends,
            share(s->sends, st->sends_stacked));
    }
    say(r, "]}");
}

static const char *actor_text(const struct report *r, uint32_t i, char *buf)
{
    const struct match_actor *a = &r->st->match.actors[i];
    char name[TEXT_NAME + 24];
    const struct name *n = actor_name(r, a);
    const char *text = text_name(name, n, at__actor_prefix(a->id), at__actor_number(a->id));
    unsigned long long id = at__actor_number(a->id);
    if (r->d->ntraces > 1)
        snprintf(buf, 96, "%s (%llu) [pid %llu]", text, id,
                 (unsigned long long)r->d->traces[a->trace].process.pid);
    else
        snprintf(buf, 96, "%s (%llu)", text, id);
    return buf;
}

static void text_actors(struct report *r, const uint32_t *order)
{
    char name[96], busy[24];
    size_t n = r->nactors;
    say(r, "\nActors (busiest %d of %zu; received: sends to it; latency of its messages)\n",
        n < TEXT_ROWS ? (int)n : TEXT_ROWS, n);
    say(r, "  %-32s %10s %10s %10s %10s %10s %6s %9s %9s %9s %9s\n", "actor", "events", "sent",
        "received", "steps", "in steps", "depth", "p50", "p90", "p99", "max");
    for (size_t i = 0; i < n && i < TEXT_ROWS; i++) {
        const struct stat_actor *a = stat_actor_of(r->st, order[i]);
        say(r, "  %-32s %10llu %10llu %10llu %10llu %10s %6u", actor_text(r, order[i], name),
            (unsigned long long)a->events, (unsigned long long)a->sent,
            (unsigned long long)a->received, (unsigned long long)a->steps,
            duration(busy, a->busy_ns), r->st->match.actors[order[i]].max_depth);
        text_latency(r, &a->latency);
        say(r, "\n");
    }
}

static void text_depth(struct report *r, const uint32_t *order)
{
    char name[96], span[24];
    say(r, "\nMailbox depth over time (largest in each 1/%d of the run, %s each)\n", STATS_SLOTS,
        duration(span, (r->st->last_ns - r->st->first_ns) / STATS_SLOTS));
    size_t shown = 0;
    for (size_t i = 0; i < r->nactors && shown < TEXT_ROWS / 2; i++, shown++) {
        if (r->st->match.actors[order[i]].max_depth == 0)
            break;
        say(r, "  %-32s", actor_text(r, order[i], name));
        for (int s = 0; s < STATS_SLOTS; s++)
            say(r, " %u", stat_actor_of(r->st, order[i])->depth_slots[s]);
        say(r, "\n");
    }
    if (shown == 0)
        say(r, "  (no message waited in a mailbox)\n");
}

static void text_threads(struct report *r)
{
    char parked[24], name[TEXT_NAME + 24];
    say(r, "\nThreads (parked: from a park to the thread's next event)\n");
    say(r, "  %-8s %-16s %10s %8s %10s %7s\n", "tid", "name", "events", "parks", "parked", "share");
    for (size_t i = 0; i < r->d->ntraces; i++) {
        const struct trace *t = &r->d->traces[i];
        for (size_t j = 0; j < t->nthreads; j++) {
            const struct stat_thread *th = &r->st->threads[i][j];
            uint64_t life = th->last_ns > th->first_ns ? th->last_ns - th->first_ns : 0;
            const struct thread *tt = &t->threads[j];
            const struct name n = {.s = tt->name, .len = tt->name_len};
            say(r, "  %-8u %-16.16s %10llu %8llu %10s %6.1f%%\n", tt->tid,
                tt->name ? text_name(name, &n, "", 0) : "", (unsigned long long)th->events,
                (unsigned long long)th->parks, duration(parked, th->parked_ns),
                life ? 100.0 * (double)th->parked_ns / (double)life : 0.0);
        }
    }
}

static const char *reason_name(uint8_t reason)
{
    static const char *const names[] = {[AT_LOST_DROPPED] = "dropped",
                                        [AT_LOST_WRITE_ERROR] = "write_error",
                                        [AT_LOST_OVERWRITTEN] = "overwritten"};
    return reason < sizeof names / sizeof *names && names[reason] ? names[reason] : "other";
}

static void text_drops(struct report *r)
{
    char from[24], to[24];
    size_t shown = 0, total = 0;
    say(r, "\nDrops (time from the start of the run)\n");
    for (size_t i = 0; i < r->d->ntraces; i++) {
        const struct trace *t = &r->d->traces[i];
        size_t hint = 0;
        for (size_t j = 0; j < t->nlost; j++, total++) {
            const struct lost *l = &t->lost[j];
            uint64_t a = at__clock_ns(&t->clock, l->first_tsc, &hint);
            uint64_t b = at__clock_ns(&t->clock, l->last_tsc, &hint);
            if (shown++ < TEXT_ROWS)
                say(r, "  tid %-8u %-12s %10llu events  +%s .. +%s\n", l->tid,
                    reason_name(l->reason), (unsigned long long)l->count,
                    duration(from, a > r->st->first_ns ? a - r->st->first_ns : 0),
                    duration(to, b > r->st->first_ns ? b - r->st->first_ns : 0));
        }
    }
    if (total == 0)
        say(r, "  none\n");
    else if (total > TEXT_ROWS)
        say(r, "  ... %zu more loss records (--json lists them all)\n", total - TEXT_ROWS);
}

/* Sends the matcher stopped following before the end: see match.h. */
static uint64_t given_up(const struct matcher *m)
{
    return m->superseded + m->evicted + m->untracked;
}

static void text_matching(struct report *r)
{
    const struct matcher *m = &r->st->match;
    say(r,
        "\nSend -> step matching: %llu by message id, %llu by mailbox order; %llu sends never "
        "handled (%llu of them given up, unfollowed); %llu steps and %llu recvs without a traced "
        "send; %llu timer, poller or task steps\n",
        (unsigned long long)m->by_id, (unsigned long long)m->by_order,
        (unsigned long long)at__match_unhandled(m), (unsigned long long)given_up(m),
        (unsigned long long)m->steps_unmatched, (unsigned long long)m->recvs_unmatched,
        (unsigned long long)m->steps_without_msg);
}

/* ---- JSON -------------------------------------------------------------------------------- */

static void json_latency(struct report *r, const char *key, const struct hist *h)
{
    say(r, ",\"%s\":{\"count\":%llu,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"max\":%llu}", key,
        (unsigned long long)h->count, (unsigned long long)at__hist_percentile(h, 0.5),
        (unsigned long long)at__hist_percentile(h, 0.9),
        (unsigned long long)at__hist_percentile(h, 0.99), (unsigned long long)h->max);
}

static void json_kinds(struct report *r)
{
    char buf[TEXT_NAME + 24];
    const char *sep = "";
    say(r, ",\"kinds\":{");
    for (unsigned k = 0; k < 256; k++) {
        if (!r->st->kinds[k])
            continue;
        const char *name = kind_name(r, k, buf);
        say(r, "%s", sep);
        json_str(r, name, strlen(name));
        say(r, ":%llu", (unsigned long long)r->st->kinds[k]);
        sep = ",";
    }
    say(r, "}");
}

static void json_msgs(struct report *r, const uint32_t *order)
{
    say(r, ",\n\"messages\":[");
    for (size_t i = 0; i < r->st->nmsgs; i++) {
        const struct stat_msg *m = &r->st->msgs[order[i]];
        say(r, "%s\n{\"pid\":%llu,\"name_id\":%u,", i ? "," : "",
            (unsigned long long)r->d->traces[m->trace].process.pid, m->name);
        if (m->name)
            json_name(r, msg_name(r, m), "name_",
                      at__names_msg_number(&r->d->traces[m->trace].names, m->name));
        else
            say(r, "\"name\":\"" AT_UNNAMED "\"");
        say(r, ",\"sent\":%llu,\"received\":%llu,\"handled\":%llu,\"handling_ns\":%llu",
            (unsigned long long)m->sent, (unsigned long long)m->received,
            (unsigned long long)m->handled, (unsigned long long)m->handling_ns);
        json_latency(r, "latency_ns", &m->latency);
        json_latency(r, "recv_latency_ns", &m->recv_latency);
        say(r, "}");
    }
    say(r, "]");
}

static void json_actors(struct report *r, const uint32_t *order)
{
    say(r, ",\n\"actors\":[");
    for (size_t i = 0; i < r->nactors; i++) {
        const struct match_actor *m = &r->st->match.actors[order[i]];
        const struct stat_actor *a = stat_actor_of(r->st, order[i]);
        say(r, "%s\n{\"pid\":%llu,\"actor\":%llu,%s", i ? "," : "",
            (unsigned long long)r->d->traces[m->trace].process.pid,
            (unsigned long long)at__actor_number(m->id),
            m->id & AT_ACTOR_REMOTE ? "\"remote\":true," : "");
        json_name(r, actor_name(r, m), at__actor_prefix(m->id), at__actor_number(m->id));
        say(r,
            ",\"events\":%llu,\"sent\":%llu,\"received\":%llu,\"steps\":%llu,"
            "\"busy_ns\":%llu,\"max_depth\":%u,\"depth_over_time\":[",
            (unsigned long long)a->events, (unsigned long long)a->sent,
            (unsigned long long)a->received, (unsigned long long)a->steps,
            (unsigned long long)a->busy_ns, m->max_depth);
        for (int s = 0; s < STATS_SLOTS; s++)
            say(r, "%s%u", s ? "," : "", a->depth_slots[s]);
        say(r, "]");
        json_latency(r, "latency_ns", &a->latency);
        say(r, "}");
    }
    say(r, "]");
}

static void json_threads(struct report *r)
{
    const char *sep = "";
    say(r, ",\n\"threads\":[");
    for (size_t i = 0; i < r->d->ntraces; i++) {
        const struct trace *t = &r->d->traces[i];
        for (size_t j = 0; j < t->nthreads; j++, sep = ",") {
            const struct stat_thread *th = &r->st->threads[i][j];
            const struct thread *tt = &t->threads[j];
            say(r, "%s\n{\"pid\":%llu,\"tid\":%u,", sep, (unsigned long long)t->process.pid,
                tt->tid);
            const struct name n = {.s = tt->name, .len = tt->name_len};
            json_name(r, tt->name ? &n : NULL, "thread ", tt->tid);
            say(r,
                ",\"events\":%llu,\"parks\":%llu,\"parked_ns\":%llu,\"first_ns\":%llu,"
                "\"last_ns\":%llu}",
                (unsigned long long)th->events, (unsigned long long)th->parks,
                (unsigned long long)th->parked_ns, (unsigned long long)th->first_ns,
                (unsigned long long)th->last_ns);
        }
    }
    say(r, "]");
}

static void json_lost(struct report *r)
{
    const char *sep = "";
    say(r, ",\n\"lost\":[");
    for (size_t i = 0; i < r->d->ntraces; i++) {
        const struct trace *t = &r->d->traces[i];
        size_t hint = 0;
        for (size_t j = 0; j < t->nlost; j++, sep = ",") {
            const struct lost *l = &t->lost[j];
            uint64_t from = at__clock_ns(&t->clock, l->first_tsc, &hint);
            uint64_t to = at__clock_ns(&t->clock, l->last_tsc, &hint);
            say(r,
                "%s{\"pid\":%llu,\"tid\":%u,\"reason\":\"%s\",\"count\":%llu,"
                "\"from_ns\":%llu,\"to_ns\":%llu}",
                sep, (unsigned long long)t->process.pid, l->tid, reason_name(l->reason),
                (unsigned long long)l->count, (unsigned long long)from, (unsigned long long)to);
        }
    }
    say(r, "]");
}

/* The hosts' clocks, when the traces come from several (clocks.c). */
static void json_hosts(struct report *r)
{
    char *p = r->err || !r->d->clocks ? NULL : at__out_reserve(r->o, at__clocks_json_bound(r->d));
    if (p)
        at__out_commit(r->o, at__clocks_json(p, r->d));
    else if (!r->err && r->d->clocks)
        r->err = -ENOMEM;
}

static void json_report(struct report *r, const uint32_t *msgs, const uint32_t *actors,
                        const uint32_t *senders)
{
    const struct summary *s = r->sum;
    const struct matcher *m = &r->st->match;
    say(r,
        "{\"events\":%llu,\"files\":%zu,\"threads\":%llu,\"first_ns\":%llu,\"last_ns\":%llu,"
        "\"dropped\":%llu,\"damaged_frames\":%llu,\"torn\":%llu,\"truncated\":%s,"
        "\"stacks\":%llu,\"stacks_skipped\":%llu",
        (unsigned long long)s->events, s->files, (unsigned long long)s->threads,
        (unsigned long long)r->st->first_ns, (unsigned long long)r->st->last_ns,
        (unsigned long long)s->dropped, (unsigned long long)s->damaged_frames,
        (unsigned long long)s->torn, s->truncated ? "true" : "false", (unsigned long long)s->stacks,
        (unsigned long long)s->stacks_skipped);
    json_kinds(r);
    json_msgs(r, msgs);
    json_actors(r, actors);
    json_threads(r);
    json_lost(r);
    json_hosts(r);
    json_senders(r, senders);
    say(r,
        ",\n\"matching\":{\"by_id\":%llu,\"by_order\":%llu,\"unhandled_sends\":%llu,"
        "\"given_up_sends\":%llu,\"steps_without_send\":%llu,\"recvs_without_send\":%llu,"
        "\"steps_without_message\":%llu}}\n",
        (unsigned long long)m->by_id, (unsigned long long)m->by_order,
        (unsigned long long)at__match_unhandled(m), (unsigned long long)given_up(m),
        (unsigned long long)m->steps_unmatched, (unsigned long long)m->recvs_unmatched,
        (unsigned long long)m->steps_without_msg);
}

static void text_report(struct report *r, const uint32_t *msgs, const uint32_t *actors,
                        const uint32_t *deepest, const uint32_t *senders)
{
    text_header(r);
    text_kinds(r);
    text_msgs(r, msgs);
    text_senders(r, senders);
    text_actors(r, actors);
    text_depth(r, deepest);
    text_threads(r);
    text_drops(r);
    text_matching(r);
}

int at__stats_report(struct out *o, const struct decode *d, struct stats *st,
                     const struct summary *s)
{
    struct report r = {o, d, st, s, 0, 0};
    finish(&r);
    uint32_t *msgs = sorted(st->nmsgs, by_traffic, st);
    uint32_t *actors = sorted(st->match.nactors, by_events, st);
    uint32_t *deepest = sorted(st->match.nactors, by_depth, st);
    uint32_t *senders = sorted(st->nsenders, by_sends, st);
    r.nactors = real_actors(st, actors);
    real_actors(st, deepest);
    if (!msgs || !actors || !deepest || !senders)
        r.err = -ENOMEM;
    else if (d->json)
        json_report(&r, msgs, actors, senders);
    else
        text_report(&r, msgs, actors, deepest, senders);
    free(senders);
    free(msgs);
    free(actors);
    free(deepest);
    return r.err;
}
