/* The JSONL output: one JSON object per event in time order, then one summary object. Field
 * names follow Aether's tracer (ts_ns, core, event, actor, sender, msg, msg_name) plus tid and
 * path; the --help text in main.c is the reference for every field. */
#include <errno.h>
#include <stdbool.h>

#include "at_events.h"
#include "clocks.h"
#include "session.h"
#include "output.h"
#include "sockets.h"
#include "stacks.h"

/* Room for everything but names: at most 13 keys and 9 numbers of 20 digits, with margin. */
#define LINE_FIXED 512

static size_t bound(const struct name *n)
{
    return n ? at__json_str_bound(n->len) : 0;
}

/* A name, or "prefixN" when the id has none. */
static char *put_name(char *p, const struct name *n, const char *prefix, size_t prefix_len,
                      uint64_t id)
{
    if (n)
        return at__fmt_json_str(p, n->s, n->len);
    *p++ = '"';
    memcpy(p, prefix, prefix_len);
    p = at__fmt_u64(p + prefix_len, id);
    *p++ = '"';
    return p;
}

static char *put_kind(char *p, unsigned kind, const struct name *registered)
{
    const char *builtin = at__kind_builtin(kind);
    if (builtin) {
        *p++ = '"';
        size_t len = strlen(builtin);
        memcpy(p, builtin, len);
        p += len;
        *p++ = '"';
        return p;
    }
    return put_name(p, registered, "kind_", 5, kind);
}

/* A send, or a send_failed (a kind the CZMQ shim registers), which has a send's fields. */
static bool is_send(const struct at_event *ev, const struct name *kind)
{
    static const char failed[] = "send_failed";
    return ev->kind == AT_EV_SEND ||
           (kind && kind->len == sizeof failed - 1 && memcmp(kind->s, failed, kind->len) == 0);
}

/* The peer is the sender for a send and a recv, and written as "peer" for every other kind. */
static char *put_peer(char *p, const struct at_event *ev, bool send, const struct name *peer_name)
{
    bool sender = send || ev->kind == AT_EV_RECV;
    p = sender ? AT_PUT(p, ",\"sender\":") : AT_PUT(p, ",\"peer\":");
    p = at__fmt_u64(p, at__actor_number(ev->peer));
    if (ev->peer & AT_ACTOR_REMOTE) /* another node's actor, numbered there: no name here */
        return sender ? AT_PUT(p, ",\"sender_remote\":true") : AT_PUT(p, ",\"peer_remote\":true");
    if (peer_name) {
        p = sender ? AT_PUT(p, ",\"sender_name\":") : AT_PUT(p, ",\"peer_name\":");
        p = at__fmt_json_str(p, peer_name->s, peer_name->len);
    }
    return p;
}

/* A trace of the BEAM (the exe is its beam.smp) has the emulator's pids as actor ids (see
 * shim/beam.c): each is also written as Erlang prints it, <0.N.0>, N being bits 4 to 31 of the
 * pid (bits 32 and up index the emulator's process table). */
static bool is_beam(const struct trace *t)
{
    static const char emulator[] = "/beam.smp";
    size_t len = t->process.exe ? strlen(t->process.exe) : 0;
    return len >= sizeof emulator - 1 &&
           strcmp(t->process.exe + len - (sizeof emulator - 1), emulator) == 0;
}

static char *put_pid(char *p, const char *key, size_t key_len, uint64_t id)
{
    if ((id & 0xf) != 0x3 || id >> 62) /* not a pid: a scheduler, say */
        return p;
    memcpy(p, key, key_len);
    p = at__fmt_u64(AT_PUT(p + key_len, "\"<0."), id >> 4 & 0xfffffff);
    return AT_PUT(p, ".0>\"");
}

static int jsonl_event(struct out *o, const struct decode *d, const struct merged *e)
{
    const struct at_event *ev = e->ev;
    const struct names *nm = &e->trace->names;
    const struct name *msg_name = ev->name ? at__names_get(nm, AT_NAME_MSG, ev->name) : NULL;
    const struct name *actor = ev->actor ? at__names_get(nm, AT_NAME_ACTOR, ev->actor) : NULL;
    const struct name *peer = ev->peer ? at__names_get(nm, AT_NAME_ACTOR, ev->peer) : NULL;
    const struct name *path = ev->path ? at__names_get(nm, AT_NAME_PATH, ev->path) : NULL;
    const struct name *kind = at__names_get(nm, AT_NAME_EVENT, ev->kind);
    size_t stack_len;
    const char *stack = at__stacks_json(e->trace, e->stack, &stack_len);
    char *p =
        at__out_reserve(o, LINE_FIXED + bound(msg_name) + bound(actor) + bound(peer) + bound(path) +
                               bound(kind) + stack_len + bound(at__sockets_remote_name(d)));
    if (!p)
        return -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "{\"ts_ns\":"), e->ts_ns);
    p = at__fmt_u64(AT_PUT(p, ",\"core\":"), ev->core);
    if (d->ntraces > 1)
        p = at__fmt_u64(AT_PUT(p, ",\"pid\":"), e->trace->process.pid);
    p = at__fmt_u64(AT_PUT(p, ",\"tid\":"), e->thread->tid);
    p = put_kind(AT_PUT(p, ",\"event\":"), ev->kind, kind);
    bool send = is_send(ev, kind);
    if (ev->actor) /* left out when unknown: a send's receiver the decoder could not name */
        p = at__fmt_u64(AT_PUT(p, ",\"actor\":"), ev->actor);
    if (actor)
        p = at__fmt_json_str(AT_PUT(p, ",\"actor_name\":"), actor->s, actor->len);
    bool beam = is_beam(e->trace);
    if (beam)
        p = put_pid(p, ",\"actor_pid\":", 13, ev->actor);
    if (ev->peer)
        p = put_peer(p, ev, send, peer);
    if (beam && ev->peer)
        p = send || ev->kind == AT_EV_RECV ? put_pid(p, ",\"sender_pid\":", 14, ev->peer)
                                           : put_pid(p, ",\"peer_pid\":", 12, ev->peer);
    if (ev->msg)
        p = at__fmt_u64(AT_PUT(p, ",\"msg\":"), ev->msg);
    if (ev->name)
        p = put_name(AT_PUT(p, ",\"msg_name\":"), msg_name, "name_", 5,
                     at__names_msg_number(nm, ev->name));
    if (ev->path)
        p = put_name(AT_PUT(p, ",\"path\":"), path, "path_", 5, ev->path);
    if (stack)
        p = at__put(AT_PUT(p, ",\"stack\":"), stack, stack_len);
    p = at__sockets_json(p, d);
    if (e->recovered)
        p = AT_PUT(p, ",\"recovered\":true");
    if (e->ring)
        p = AT_PUT(p, ",\"ring\":true");
    at__out_commit(o, AT_PUT(p, "}\n"));
    return 0;
}

static char *put_reason(char *p, uint8_t reason)
{
    switch (reason) {
    case AT_LOST_DROPPED:
        return AT_PUT(p, "\"dropped\"");
    case AT_LOST_WRITE_ERROR:
        return AT_PUT(p, "\"write_error\"");
    case AT_LOST_OVERWRITTEN:
        return AT_PUT(p, "\"overwritten\"");
    default:
        return put_name(p, NULL, "reason_", 7, reason);
    }
}

/* The "lost" array: every LOST record of every trace, its tsc range in nanoseconds. */
static int put_lost(struct out *o, const struct decode *d)
{
    bool first = true;
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct trace *t = &d->traces[i];
        size_t hint = 0;
        for (size_t j = 0; j < t->nlost; j++, first = false) {
            const struct lost *l = &t->lost[j];
            char *p = at__out_reserve(o, LINE_FIXED);
            if (!p)
                return -ENOMEM;
            p = first ? AT_PUT(p, "{") : AT_PUT(p, ",{");
            if (d->ntraces > 1)
                p = AT_PUT(at__fmt_u64(AT_PUT(p, "\"pid\":"), t->process.pid), ",");
            p = at__fmt_u64(AT_PUT(p, "\"tid\":"), l->tid);
            p = put_reason(AT_PUT(p, ",\"reason\":"), l->reason);
            p = at__fmt_u64(AT_PUT(p, ",\"count\":"), l->count);
            uint64_t from = at__clock_ns(&t->clock, l->first_tsc, &hint);
            uint64_t to = at__clock_ns(&t->clock, l->last_tsc, &hint);
            p = at__fmt_u64(AT_PUT(p, ",\"from_ns\":"), from);
            p = at__fmt_u64(AT_PUT(p, ",\"to_ns\":"), to);
            at__out_commit(o, AT_PUT(p, "}"));
        }
    }
    return 0;
}

/* The "patches" array: every PATCH record of every trace. */
static int put_patches(struct out *o, const struct decode *d)
{
    bool first = true;
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct trace *t = &d->traces[i];
        for (size_t j = 0; j < t->npatches; j++, first = false) {
            const struct patch_record *r = &t->patches[j];
            size_t ls = strlen(r->symbol), lo = strlen(r->object), lw = strlen(r->why);
            char *p = at__out_reserve(o, LINE_FIXED + at__json_str_bound(ls) +
                                             at__json_str_bound(lo) + at__json_str_bound(lw));
            if (!p)
                return -ENOMEM;
            p = first ? AT_PUT(p, "{\"symbol\":") : AT_PUT(p, ",{\"symbol\":");
            p = at__fmt_json_str(p, r->symbol, ls);
            p = at__fmt_json_str(AT_PUT(p, ",\"object\":"), r->object, lo);
            if (r->status == AT_PATCH_DONE && strcmp(r->why, "direct") == 0)
                p = AT_PUT(p, ",\"patched\":true,\"direct\":true");
            else if (r->status == AT_PATCH_DONE)
                p = AT_PUT(p, ",\"patched\":true");
            else
                p = at__fmt_json_str(AT_PUT(p, ",\"patched\":false,\"why\":"), r->why, lw);
            at__out_commit(o, AT_PUT(p, "}"));
        }
    }
    return 0;
}

static bool any_patches(const struct decode *d)
{
    for (size_t i = 0; i < d->ntraces; i++)
        if (d->traces[i].npatches)
            return true;
    return false;
}

static int jsonl_end(struct out *o, const struct decode *d, const struct summary *s)
{
    char *p = at__out_reserve(o, LINE_FIXED);
    if (!p)
        return -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "{\"summary\":true,\"events\":"), s->events);
    p = at__fmt_u64(AT_PUT(p, ",\"dropped\":"), s->dropped);
    p = at__fmt_u64(AT_PUT(p, ",\"threads\":"), s->threads);
    p = s->truncated ? AT_PUT(p, ",\"truncated\":true") : AT_PUT(p, ",\"truncated\":false");
    p = at__fmt_u64(AT_PUT(p, ",\"damaged_frames\":"), s->damaged_frames);
    p = at__fmt_u64(AT_PUT(p, ",\"torn\":"), s->torn);
    p = at__fmt_u64(AT_PUT(p, ",\"recovered\":"), s->recovered);
    p = at__fmt_u64(AT_PUT(p, ",\"stacks\":"), s->stacks);
    p = at__fmt_u64(AT_PUT(p, ",\"stacks_skipped\":"), s->stacks_skipped);
    at__out_commit(o, AT_PUT(p, ",\"lost\":["));
    int err = put_lost(o, d);
    if (err < 0 || !(p = at__out_reserve(o, LINE_FIXED)))
        return err < 0 ? err : -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "],\"files\":"), s->files);
    if (d->clocks) { /* only for traces of several hosts */
        at__out_commit(o, p);
        if (!(p = at__out_reserve(o, at__clocks_json_bound(d) + LINE_FIXED)))
            return -ENOMEM;
        p = at__clocks_json(p, d);
    }
    if (any_patches(d)) { /* only for traces of patched programs */
        at__out_commit(o, AT_PUT(p, ",\"patches\":["));
        if ((err = put_patches(o, d)) < 0 || !(p = at__out_reserve(o, LINE_FIXED)))
            return err < 0 ? err : -ENOMEM;
        p = AT_PUT(p, "]");
    }
    at__out_commit(o, AT_PUT(p, "}\n"));
    return 0;
}

const struct output_ops at__jsonl_ops = {
    .name = "jsonl",
    .event = jsonl_event,
    .end = jsonl_end,
};
