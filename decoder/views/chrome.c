/* --format chrome: Chrome trace JSON ({"traceEvents":[...]}), which chrome://tracing and
 * ui.perfetto.dev read, with the tracks and items of timeline.c. JSON only knows processes
 * and threads, so an actor or core track is a thread of its process with an id of its own
 * (TRACK_TID_BASE + its seq, above any Linux tid), named by a thread_name record. Flows are
 * the classic flow events: "s" at the send, "t" at the first of its recv and its step, "f"
 * (bound to the enclosing slice) at the other. An event's message id and call stack are its
 * args. A "summary" object follows the events. */
#include <errno.h>
#include <stdlib.h>

#include "session.h"
#include "output.h"
#include "stacks.h"
#include "timeline.h"

#define TRACK_TID_BASE 0x40000000ull
#define RECORD_FIXED   256 /* a record without its name: keys and numbers, with margin */

struct chrome {
    struct tl_format f;
    bool first; /* no record written yet: no comma before the next */
};

static uint64_t tid_of(const struct tl_track *t)
{
    return t->kind == TL_THREAD ? t->id : TRACK_TID_BASE + t->seq;
}

/* Microseconds with three decimals: the exact nanosecond. */
static char *put_ts(char *p, uint64_t ns)
{
    p = at__fmt_u64(AT_PUT(p, ",\"ts\":"), ns / 1000);
    uint64_t frac = ns % 1000;
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    *p++ = (char)('0' + frac / 10 % 10);
    *p++ = (char)('0' + frac % 10);
    return p;
}

/* The opening of a record up to its pid and tid. */
static char *put_head(struct chrome *c, char *p, const char *ph, const struct tl_track *t)
{
    if (!c->first)
        p = AT_PUT(p, ",\n");
    c->first = false;
    p = AT_PUT(p, "{\"ph\":\"");
    *p++ = ph[0];
    p = at__fmt_u64(AT_PUT(p, "\",\"pid\":"), t->trace->process.pid);
    return at__fmt_u64(AT_PUT(p, ",\"tid\":"), tid_of(t));
}

/* Actors first, then threads, then cores; in each, in the order of first use. */
static uint64_t sort_index(const struct tl_track *t)
{
    static const uint64_t rank[] = {[TL_ACTOR] = 1, [TL_THREAD] = 2, [TL_CORE] = 3};
    return rank[t->kind] * 1000000 + t->seq;
}

/* Names the track: process_name or thread_name, and a sort index that puts actors first,
 * then threads, then cores. */
static int put_track(void *arg, const struct tl_track *t)
{
    struct chrome *c = arg;
    size_t len;
    const char *name = at__tl_track_name(&c->f.tl, t, &len);
    char *p = name ? at__out_reserve(c->f.o, 2 * RECORD_FIXED + at__json_str_bound(len)) : NULL;
    if (!p)
        return -ENOMEM;
    bool process = t->kind == TL_PROCESS;
    p = put_head(c, p, "M", t);
    p = process ? AT_PUT(p, ",\"name\":\"process_name\"") : AT_PUT(p, ",\"name\":\"thread_name\"");
    p = at__fmt_json_str(AT_PUT(p, ",\"args\":{\"name\":"), name, len);
    p = AT_PUT(p, "}}");
    if (!process) {
        p = AT_PUT(put_head(c, p, "M", t), ",\"name\":\"thread_sort_index\",\"args\":");
        p = at__fmt_u64(AT_PUT(p, "{\"sort_index\":"), sort_index(t));
        p = AT_PUT(p, "}}");
    }
    at__out_commit(c->f.o, p);
    return 0;
}

static char *put_flow(struct chrome *c, char *p, const char *ph, uint64_t id,
                      const struct tl_item *it)
{
    p = put_ts(put_head(c, p, ph, it->track), it->ts_ns);
    p = at__fmt_u64(AT_PUT(p, ",\"cat\":\"flow\",\"name\":\"msg\",\"id\":"), id);
    return ph[0] == 'f' ? AT_PUT(p, ",\"bp\":\"e\"}") : AT_PUT(p, "}");
}

/* The item's args: its message id and its call stack (stacks.h), when it has them. */
static char *put_args(char *p, const struct tl_item *it, const char *stack, size_t stack_len)
{
    if (!it->msg && !stack)
        return p;
    p = AT_PUT(p, ",\"args\":{");
    if (it->msg)
        p = at__fmt_u64(AT_PUT(p, "\"msg\":"), it->msg);
    if (stack)
        p = at__put(it->msg ? AT_PUT(p, ",\"stack\":") : AT_PUT(p, "\"stack\":"), stack, stack_len);
    return AT_PUT(p, "}");
}

static int put_item(void *arg, const struct tl_item *it)
{
    struct chrome *c = arg;
    static const char phase[] = {[TL_BEGIN] = 'B', [TL_END] = 'E', [TL_INSTANT] = 'i'};
    size_t len = 0, stack_len = 0;
    const char *name = it->type == TL_END ? "" : at__tl_item_name(&c->f.tl, it, &len);
    const char *stack =
        it->type == TL_END ? NULL : at__stacks_json(it->track->trace, it->stack, &stack_len);
    size_t flows = it->flows_out > 1 ? it->flows_out : 1;
    char *p = name ? at__out_reserve(c->f.o, (2 + flows) * RECORD_FIXED + at__json_str_bound(len) +
                                                 stack_len)
                   : NULL;
    if (!p)
        return -ENOMEM;
    p = put_ts(put_head(c, p, &phase[it->type], it->track), it->ts_ns);
    if (it->type != TL_END)
        p = at__fmt_json_str(AT_PUT(p, ",\"name\":"), name, len);
    if (it->type == TL_INSTANT)
        p = AT_PUT(p, ",\"s\":\"t\"");
    if (it->type != TL_END)
        p = put_args(p, it, stack, stack_len);
    p = AT_PUT(p, "}");
    for (uint32_t i = 0; it->flow_out && i < flows; i++) /* one per delivery */
        p = put_flow(c, p, "s", it->flow_out + i, it);
    if (it->flow_via)
        p = put_flow(c, p, "t", it->flow_via, it);
    if (it->flow_in)
        p = put_flow(c, p, "f", it->flow_in, it);
    at__out_commit(c->f.o, p);
    return 0;
}

static void *chrome_create(const struct decode *d)
{
    struct chrome *c = at__tl_format_create(d, sizeof *c, put_track, put_item);
    if (c)
        c->first = true;
    return c;
}

static int chrome_begin(struct out *o, const struct decode *d)
{
    (void)d;
    char *p = at__out_reserve(o, RECORD_FIXED);
    if (!p)
        return -ENOMEM;
    at__out_commit(o, AT_PUT(p, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"));
    return 0;
}

static int chrome_end(struct out *o, const struct decode *d, const struct summary *s)
{
    struct chrome *c = d->state;
    int err = at__tl_format_finish(o, d);
    char *p = err ? NULL : at__out_reserve(o, 2 * RECORD_FIXED);
    if (!p)
        return err ? err : -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "\n],\"summary\":{\"events\":"), s->events);
    p = at__fmt_u64(AT_PUT(p, ",\"dropped\":"), s->dropped);
    p = at__fmt_u64(AT_PUT(p, ",\"stacks\":"), s->stacks);
    p = at__fmt_u64(AT_PUT(p, ",\"flows\":"), c->f.tl.match.next_flow - 1);
    p = at__fmt_u64(AT_PUT(p, ",\"unhandled_sends\":"), at__match_unhandled(&c->f.tl.match));
    p = s->truncated ? AT_PUT(p, ",\"truncated\":true") : AT_PUT(p, ",\"truncated\":false");
    at__out_commit(o, AT_PUT(p, "}}\n"));
    return 0;
}

const struct output_ops at__chrome_ops = {
    .name = "chrome",
    .create = chrome_create,
    .destroy = at__tl_format_destroy,
    .begin = chrome_begin,
    .event = at__tl_format_event,
    .end = chrome_end,
};
