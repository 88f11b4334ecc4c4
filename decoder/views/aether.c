/* --format aether: the JSONL schema of Aether's built-in tracer (`ae build --trace`), so that
 * scripts written for its output read our traces unchanged. One object per send and step, with
 * Aether's keys as it writes them:
 *   send: {"ts_ns","core","event","actor","msg","msg_name","sender"}, msg the message type and
 *         msg_name only when the type has a name (Aether's event names send_local, send_remote);
 *   step: {"ts_ns","core","event","actor","msg":-1} (step_begin, step_end);
 * then its summary line {"summary":true,"events","dropped","capacity_per_core"}. core is
 * Aether's scheduler core: -1 on the main thread, else the core the actor was placed on (its
 * schedule event names that core's worker). What Aether's tracer does not write goes in keys
 * of our own, after its keys: "cpu" (the CPU the event was recorded on) on every line, and on
 * a step that took a message "type" and "type_name" (when the type has a name). A send whose
 * path ends in "local" is send_local, any other send_remote (batch, ask and
 * aether_send_message sends included, which Aether's tracer does not see); sender is the real
 * sender where Aether's tracer writes 0.
 * Events Aether's schema has no name for (spawn, park, ...) are left out; capacity_per_core
 * is the events one thread's block holds, the unit our recorder hands over (it has no per-core
 * ring). */
#include <errno.h>
#include <stdlib.h>

#include "at_events.h"
#include "session.h"
#include "hmap.h"
#include "output.h"

#define LINE_FIXED 256

/* shim/aether.c's actor ids of the main thread and of core N's worker (WORKER + N). */
#define AETHER_MAIN   (1ull << 40)
#define AETHER_WORKER (AETHER_MAIN + 1)
#define AETHER_CORES  256

struct aether_out {
    uint64_t written;
    struct hmap placed; /* (trace, actor) -> the core its schedule event placed it on */
};

static bool ends_with_local(const struct name *path)
{
    return path && path->len >= 5 && memcmp(path->s + path->len - 5, "local", 5) == 0;
}

static char *put_event(char *p, const struct merged *e)
{
    const struct at_event *ev = e->ev;
    if (ev->kind == AT_EV_STEP_BEGIN)
        return AT_PUT(p, "\"step_begin\"");
    if (ev->kind == AT_EV_STEP_END)
        return AT_PUT(p, "\"step_end\"");
    const struct name *path = at__names_get(&e->trace->names, AT_NAME_PATH, ev->path);
    return ends_with_local(path) ? AT_PUT(p, "\"send_local\"") : AT_PUT(p, "\"send_remote\"");
}

static char *put_int(char *p, int64_t v)
{
    return v < 0 ? at__fmt_u64(AT_PUT(p, "-"), (uint64_t)-v) : at__fmt_u64(p, (uint64_t)v);
}

/* Aether's core of an event: -1 on the main thread, else the core of the actor running (the
 * step's, the sender of a send), -1 when unknown. */
static int64_t scheduler_core(const struct aether_out *a, const struct merged *e, uint32_t trace)
{
    const struct at_event *ev = e->ev;
    if (e->thread->tid == e->trace->process.pid)
        return -1;
    uint64_t running = ev->kind == AT_EV_SEND ? ev->peer : ev->actor;
    const uint32_t *core = at__hmap_get(&a->placed, (struct hkey){trace, running});
    return core ? (int64_t)*core : -1;
}

/* A schedule event places its actor on the core whose worker it names. */
static int placed(struct aether_out *a, const struct at_event *ev, uint32_t trace)
{
    if (ev->peer < AETHER_WORKER || ev->peer >= AETHER_WORKER + AETHER_CORES)
        return 0;
    return at__hmap_put(&a->placed, (struct hkey){trace, ev->actor},
                        (uint32_t)(ev->peer - AETHER_WORKER));
}

/* The message type a name id stands for; -1 for none. */
static int64_t type_of(const struct names *nm, uint32_t name)
{
    return name ? (int64_t)at__names_msg_number(nm, name) : -1;
}

static char *put_send(char *p, const struct names *nm, const struct at_event *ev,
                      const struct name *msg_name)
{
    p = put_int(AT_PUT(p, ",\"msg\":"), type_of(nm, ev->name));
    if (msg_name)
        p = at__fmt_json_str(AT_PUT(p, ",\"msg_name\":"), msg_name->s, msg_name->len);
    return at__fmt_u64(AT_PUT(p, ",\"sender\":"), ev->peer);
}

/* A step: Aether's "msg":-1, then in keys of our own the type it took, if it took a message. */
static char *put_step(char *p, const struct names *nm, const struct at_event *ev,
                      const struct name *msg_name)
{
    p = put_int(AT_PUT(p, ",\"msg\":-1,\"cpu\":"), ev->core);
    if (ev->name)
        p = put_int(AT_PUT(p, ",\"type\":"), type_of(nm, ev->name));
    if (msg_name)
        p = at__fmt_json_str(AT_PUT(p, ",\"type_name\":"), msg_name->s, msg_name->len);
    return p;
}

static int aether_event(struct out *o, const struct decode *d, const struct merged *e)
{
    struct aether_out *a = d->state;
    const struct at_event *ev = e->ev;
    uint32_t trace = (uint32_t)(e->trace - d->traces);
    if (ev->kind == AT_EV_SCHEDULE)
        return placed(a, ev, trace);
    if (ev->kind != AT_EV_SEND && ev->kind != AT_EV_STEP_BEGIN && ev->kind != AT_EV_STEP_END)
        return 0;
    const struct names *nm = &e->trace->names;
    const struct name *msg_name = ev->name ? at__names_get(nm, AT_NAME_MSG, ev->name) : NULL;
    char *p = at__out_reserve(o, LINE_FIXED + (msg_name ? at__json_str_bound(msg_name->len) : 0));
    if (!p)
        return -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "{\"ts_ns\":"), e->ts_ns);
    p = put_int(AT_PUT(p, ",\"core\":"), scheduler_core(a, e, trace));
    p = put_event(AT_PUT(p, ",\"event\":"), e);
    p = at__fmt_u64(AT_PUT(p, ",\"actor\":"), ev->actor);
    if (ev->kind == AT_EV_SEND)
        p = put_int(AT_PUT(put_send(p, nm, ev, msg_name), ",\"cpu\":"), ev->core);
    else
        p = put_step(p, nm, ev, msg_name);
    at__out_commit(o, AT_PUT(p, "}\n"));
    a->written++;
    return 0;
}

static int aether_end(struct out *o, const struct decode *d, const struct summary *s)
{
    char *p = at__out_reserve(o, LINE_FIXED);
    if (!p)
        return -ENOMEM;
    uint64_t capacity = d->ntraces ? d->traces[0].process.block_slots : 0;
    p = at__fmt_u64(AT_PUT(p, "{\"summary\":true,\"events\":"),
                    ((struct aether_out *)d->state)->written);
    p = at__fmt_u64(AT_PUT(p, ",\"dropped\":"), s->dropped);
    p = at__fmt_u64(AT_PUT(p, ",\"capacity_per_core\":"), capacity);
    at__out_commit(o, AT_PUT(p, "}\n"));
    return 0;
}

static void *aether_create(const struct decode *d)
{
    (void)d;
    return calloc(1, sizeof(struct aether_out));
}

static void aether_destroy(void *state)
{
    struct aether_out *a = state;
    if (a)
        at__hmap_free(&a->placed);
    free(a);
}

const struct output_ops at__aether_ops = {
    .name = "aether",
    .create = aether_create,
    .destroy = aether_destroy,
    .event = aether_event,
    .end = aether_end,
};
