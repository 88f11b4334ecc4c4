/* --format aether: the JSONL schema of Aether's built-in tracer (`ae build --trace`), so that
 * scripts written for its output read our traces unchanged. One object per send and step:
 *   {"ts_ns","core","event","actor","msg","msg_name","sender"}
 * with Aether's event names (send_local, send_remote, step_begin, step_end), msg the message
 * type (Aether has no message ids) and msg_name its name or null, then its summary line
 *   {"summary":true,"events","dropped","capacity_per_core"}.
 * A send whose path ends in "local" is send_local, any other send_remote (batch, ask and
 * aether_send_message sends included, which Aether's tracer does not see). sender is the real
 * sender of a send, and 0 on steps, as in Aether's output. Events Aether's schema has no name
 * for (spawn, park, ...) are left out; capacity_per_core is the events one thread's block
 * holds, the unit our recorder hands over (it has no per-core ring). */
#include <errno.h>
#include <stdlib.h>

#include "at_events.h"
#include "decode.h"
#include "output.h"

#define LINE_FIXED 256

struct aether_out {
    uint64_t written;
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

static int aether_event(struct out *o, const struct decode *d, const struct merged *e)
{
    const struct at_event *ev = e->ev;
    if (ev->kind != AT_EV_SEND && ev->kind != AT_EV_STEP_BEGIN && ev->kind != AT_EV_STEP_END)
        return 0;
    const struct name *msg_name =
        ev->name ? at__names_get(&e->trace->names, AT_NAME_MSG, ev->name) : NULL;
    char *p = at__out_reserve(o, LINE_FIXED + (msg_name ? at__json_str_bound(msg_name->len) : 0));
    if (!p)
        return -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "{\"ts_ns\":"), e->ts_ns);
    p = at__fmt_u64(AT_PUT(p, ",\"core\":"), ev->core);
    p = put_event(AT_PUT(p, ",\"event\":"), e);
    p = at__fmt_u64(AT_PUT(p, ",\"actor\":"), ev->actor);
    p = at__fmt_u64(AT_PUT(p, ",\"msg\":"), ev->name);
    p = AT_PUT(p, ",\"msg_name\":");
    p = msg_name ? at__fmt_json_str(p, msg_name->s, msg_name->len) : AT_PUT(p, "null");
    p = at__fmt_u64(AT_PUT(p, ",\"sender\":"), ev->kind == AT_EV_SEND ? ev->peer : 0);
    at__out_commit(o, AT_PUT(p, "}\n"));
    ((struct aether_out *)d->state)->written++;
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

const struct output_ops at__aether_ops = {
    .name = "aether",
    .create = aether_create,
    .destroy = free,
    .event = aether_event,
    .end = aether_end,
};
