/* The timeline of the Perfetto and Chrome views.
 *
 * Tracks: one per process (trace file), and under it one per thread, one per actor and one per
 * core, each declared to the format on first use. A step is a slice on its actor's track
 * (named by its message) and on its thread's track (named by the actor), and is drawn in
 * pieces on the tracks of the cores its thread ran it on (see "Core tracks" below). A send is
 * an instant on the sending actor's track (on the thread's when the sender is unknown); every
 * other event is an instant on its thread's track. The matcher gives each send a flow that
 * passes the first of its recv and its step and ends at the other.
 *
 * Slices stay balanced whatever the trace holds: a step_end whose step_begin is missing (lost,
 * or filtered out) draws nothing, and what is still open when the events end is ended at the
 * cut (tl_finish). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "at_format.h"
#include "stacks.h"
#include "timeline.h"

/* The id a flow of the matcher has in the output. */
static uint64_t flow_id(const struct timeline *tl, uint64_t flow)
{
    return flow ? tl->flow_base + flow : 0;
}

static uint64_t mix(uint64_t x)
{
    x = (x ^ x >> 30) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ x >> 27) * 0x94D049BB133111EBull;
    return x ^ x >> 31;
}

/* Track uuids and flow ids are a base plus a count, so that the outputs of different traces
 * loaded together do not collide (as TrackDescriptor asks): a hash of each trace's pid and
 * wall-clock start. */
static uint64_t trace_hash(const struct decode *d)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct clock_map *c = &d->traces[i].clock;
        h = mix(h ^ d->traces[i].process.pid);
        h = mix(h ^ (c->n ? c->samples[0].real_ns : 0));
    }
    return h;
}

static void tl_free(struct timeline *tl)
{
    for (size_t i = 0; tl->d && i < tl->d->ntraces; i++) {
        if (tl->thread)
            free(tl->thread[i]);
        if (tl->cores)
            free(tl->cores[i].cores);
    }
    free(tl->thread);
    free(tl->cores);
    free(tl->process);
    free(tl->actors);
    free(tl->scratch);
    at__match_free(&tl->match);
    *tl = (struct timeline){0};
}

/* Returns 0 or -ENOMEM. */
static int tl_init(struct timeline *tl, const struct decode *d, struct tl_sink sink)
{
    uint64_t h = trace_hash(d);
    *tl = (struct timeline){.d = d,
                            .sink = sink,
                            .track_base = h >> 37, /* a 4-byte varint on every event */
                            .flow_base = h >> 12,  /* exact in JSON readers that use doubles */
                            .next_seq = 1};
    size_t n = d->ntraces ? d->ntraces : 1;
    tl->process = calloc(n, sizeof *tl->process);
    tl->thread = calloc(n, sizeof *tl->thread);
    tl->cores = calloc(n, sizeof *tl->cores);
    int err = tl->process && tl->thread && tl->cores ? 0 : -ENOMEM;
    for (size_t i = 0; err == 0 && i < d->ntraces; i++) {
        size_t threads = d->traces[i].nthreads;
        if (!(tl->thread[i] = calloc(threads ? threads : 1, sizeof **tl->thread)))
            err = -ENOMEM;
        for (size_t j = 0; err == 0 && j < threads; j++)
            tl->thread[i][j].on_core = TL_NO_CORE;
    }
    if (err == 0)
        err = at__match_init(&tl->match, d);
    if (err < 0)
        tl_free(tl);
    return err;
}

/* ---- Tracks ------------------------------------------------------------------------------ */

static int declare(struct timeline *tl, struct tl_track *t, enum tl_kind kind, uint32_t trace,
                   uint64_t id)
{
    if (t->seq)
        return 0;
    const struct trace *tr = &tl->d->traces[trace];
    uint64_t parent = 0;
    if (kind != TL_PROCESS) {
        int err = declare(tl, &tl->process[trace], TL_PROCESS, trace, tr->process.pid);
        if (err < 0)
            return err;
        parent = tl->process[trace].uuid;
    }
    uint64_t seq = tl->next_seq++;
    *t = (struct tl_track){.seq = seq,
                           .uuid = tl->track_base + seq,
                           .parent = parent,
                           .ts_ns = tl->now,
                           .kind = kind,
                           .trace = tr,
                           .id = id};
    return tl->sink.track(tl->sink.arg, t);
}

static int actor_track(struct timeline *tl, uint32_t trace, uint32_t index, uint64_t id,
                       struct tl_actor **out)
{
    if (at__array_reserve_zeroed((void **)&tl->actors, &tl->nactors, index, sizeof *tl->actors))
        return -ENOMEM;
    *out = &tl->actors[index];
    return declare(tl, &(*out)->track, TL_ACTOR, trace, id);
}

static int core_of(struct timeline *tl, uint32_t trace, uint32_t core, struct tl_core **out)
{
    struct tl_cores *c = &tl->cores[trace];
    if (at__array_reserve_zeroed((void **)&c->cores, &c->n, core, sizeof *c->cores))
        return -ENOMEM;
    *out = &c->cores[core];
    return 0;
}

static struct tl_thread *thread_of(const struct timeline *tl, const struct merged *e,
                                   uint32_t trace)
{
    return &tl->thread[trace][e->thread - e->trace->threads];
}

/* ---- Items ------------------------------------------------------------------------------- */

struct event_ctx {
    struct timeline *tl;
    const struct merged *e;
    const struct match_result *r;
    uint32_t trace;
    struct tl_thread *th;
};

static struct tl_item item_of(struct event_ctx *c, struct tl_track *track, enum tl_type type,
                              enum tl_what what, uint64_t id, struct tl_item it)
{
    it.type = type;
    it.track = track;
    it.ts_ns = c->tl->now;
    it.what = what;
    it.id = id;
    if (c->e) { /* not the end of the timeline */
        it.kind = c->e->ev->kind;
        it.msg = track->kind == TL_CORE ? 0 : c->e->ev->msg; /* a piece may begin at any event */
        it.stack = track->kind == TL_CORE || c->e->stack == AT_STACK_SKIPPED ? 0 : c->e->stack;
    }
    return it;
}

static int emit(struct event_ctx *c, struct tl_track *track, enum tl_type type, enum tl_what what,
                uint64_t id, struct tl_item it)
{
    it = item_of(c, track, type, what, id, it);
    return c->tl->sink.item(c->tl->sink.arg, &it);
}

/* Draws the thread's held recv: on the flow to the step that follows when `via`, else at the
 * flow's end. */
static int draw_recv(struct timeline *tl, struct tl_thread *th, bool via)
{
    struct tl_item it = th->recv;
    th->recv.track = NULL;
    if (!it.track)
        return 0;
    if (!via) {
        it.flow_in = it.flow_via;
        it.flow_via = 0;
    }
    return tl->sink.item(tl->sink.arg, &it);
}

/* The thread's held recv, now that its next event is known (its match result r). */
static int settle_recv(struct event_ctx *c)
{
    const struct match_result *r = c->r;
    uint64_t flow = flow_id(c->tl, r->flow);
    bool via = r->role == MATCH_STEP && r->ends && c->th->recv.flow_via == flow;
    return draw_recv(c->tl, c->th, via);
}

/* A recv or step on a message's flow: the flow passes it, or ends at the later of the two. */
static struct tl_item flow_of(const struct timeline *tl, const struct match_result *r)
{
    if (r->role != MATCH_RECV && r->role != MATCH_STEP)
        return (struct tl_item){0};
    uint64_t id = flow_id(tl, r->flow);
    return r->ends ? (struct tl_item){.flow_in = id} : (struct tl_item){.flow_via = id};
}

static int thread_declared(struct event_ctx *c)
{
    return declare(c->tl, &c->th->track, TL_THREAD, c->trace, c->e->thread->tid);
}

/* ---- Core tracks ---------------------------------------------------------------------------
 * A step is drawn on a core track in pieces: from its begin, or from the first event its thread
 * records on that core, to its end, or to the first event recorded on that core by another
 * thread or on another core by its own. A core's track thus holds the open steps of one thread
 * at a time, nested as they are on the thread, so every end closes the slice it was meant for. */

static uint32_t drawn(const struct tl_thread *th)
{
    return th->depth < TL_MAX_NESTED ? th->depth : TL_MAX_NESTED;
}

/* Ends the pieces of th's open steps on the core that holds them. */
static int leave(struct event_ctx *c, struct tl_thread *th)
{
    struct tl_core *k = &c->tl->cores[c->trace].cores[th->on_core];
    int err = 0;
    for (uint32_t i = drawn(th); err == 0 && i-- > 0;)
        err = emit(c, &k->track, TL_END, TL_NAME_ACTOR, th->actors[i], (struct tl_item){0});
    k->owner = NULL;
    th->on_core = TL_NO_CORE;
    return err;
}

/* Begins pieces of th's open steps on core k, which no thread holds. */
static int enter(struct event_ctx *c, struct tl_thread *th, struct tl_core *k, uint32_t core)
{
    int err = declare(c->tl, &k->track, TL_CORE, c->trace, core);
    for (uint32_t i = 0; err == 0 && i < drawn(th); i++)
        err = emit(c, &k->track, TL_BEGIN, TL_NAME_ACTOR, th->actors[i], (struct tl_item){0});
    k->owner = th;
    th->on_core = core;
    return err;
}

/* The event's thread runs on the event's core: whatever another thread held there ends, and
 * the thread's open steps move there. */
static int place(struct event_ctx *c)
{
    struct tl_thread *th = c->th;
    uint32_t core = c->e->ev->core;
    struct tl_core *k;
    if (th->on_core == core) /* the usual case: it holds that core already */
        return 0;
    int err = core_of(c->tl, c->trace, core, &k);
    if (err == 0 && k->owner && k->owner != th)
        err = leave(c, k->owner);
    if (err == 0 && th->on_core != TL_NO_CORE && th->on_core != core)
        err = leave(c, th);
    if (err == 0 && drawn(th) && th->on_core == TL_NO_CORE)
        err = enter(c, th, k, core);
    return err;
}

/* ---- Steps --------------------------------------------------------------------------------- */

static int step_begin(struct event_ctx *c)
{
    const struct at_event *ev = c->e->ev;
    struct tl_actor *a = NULL;
    struct tl_core *k;
    int err = place(c);
    if (err == 0 && c->r->actor != MATCH_NO_ACTOR &&
        (err = actor_track(c->tl, c->trace, c->r->actor, ev->actor, &a)) == 0) {
        a->open++;
        uint32_t name = ev->name || !c->r->flow ? ev->name : c->r->name;
        err = emit(c, &a->track, TL_BEGIN, TL_NAME_MSG, name, flow_of(c->tl, c->r));
    }
    if (err == 0 && (err = thread_declared(c)) == 0)
        err = emit(c, &c->th->track, TL_BEGIN, TL_NAME_ACTOR, ev->actor, (struct tl_item){0});
    if (err < 0 || c->th->depth++ >= TL_MAX_NESTED)
        return err;
    c->th->actors[c->th->depth - 1] = ev->actor;
    if ((err = core_of(c->tl, c->trace, ev->core, &k)) < 0)
        return err;
    if (c->th->on_core == TL_NO_CORE) /* its first open step: place() left the core free */
        return enter(c, c->th, k, ev->core);
    return emit(c, &k->track, TL_BEGIN, TL_NAME_ACTOR, ev->actor, (struct tl_item){0});
}

/* A step ends: its piece ends here if its thread's pieces are on this core (else that piece
 * ended when they left, or ends now where they are), and its outer steps move here. */
static int end_piece(struct event_ctx *c)
{
    struct tl_thread *th = c->th;
    uint32_t core = c->e->ev->core;
    int err = 0;
    if (th->on_core != TL_NO_CORE && th->on_core != core)
        err = leave(c, th);
    bool here = th->on_core == core;
    if (err == 0 && here && th->depth <= TL_MAX_NESTED)
        err = emit(c, &c->tl->cores[c->trace].cores[core].track, TL_END, TL_NAME_ACTOR,
                   th->actors[th->depth - 1], (struct tl_item){0});
    if (--th->depth == 0 && here) {
        c->tl->cores[c->trace].cores[core].owner = NULL;
        th->on_core = TL_NO_CORE;
    }
    return err ? err : place(c);
}

static int step_end(struct event_ctx *c)
{
    const struct at_event *ev = c->e->ev;
    struct tl_actor *a = NULL;
    int err = 0;
    if (c->r->actor != MATCH_NO_ACTOR) {
        if ((err = actor_track(c->tl, c->trace, c->r->actor, ev->actor, &a)) < 0)
            return err;
        if (!a->open)
            return place(c); /* its begin is missing: draw nothing */
        a->open--;
        err = emit(c, &a->track, TL_END, TL_NAME_MSG, ev->name, (struct tl_item){0});
    }
    if (err < 0 || c->th->depth == 0)
        return err < 0 ? err : place(c);
    if ((err = emit(c, &c->th->track, TL_END, TL_NAME_ACTOR, ev->actor, (struct tl_item){0})))
        return err;
    return end_piece(c);
}

/* A send goes on its sender's track, where the sender's step is open around it. */
static int send(struct event_ctx *c)
{
    const struct at_event *ev = c->e->ev;
    struct tl_item flow = {.flow_out = flow_id(c->tl, c->r->flow), .flows_out = c->r->flows};
    if (ev->peer == 0) {
        int err = thread_declared(c);
        return err ? err : emit(c, &c->th->track, TL_INSTANT, TL_NAME_EVENT, ev->name, flow);
    }
    uint32_t index;
    struct tl_actor *a;
    int err = at__match_actor(&c->tl->match, c->trace, ev->peer, &index);
    if (err == 0)
        err = actor_track(c->tl, c->trace, index, ev->peer, &a);
    return err ? err : emit(c, &a->track, TL_INSTANT, TL_NAME_EVENT, ev->name, flow);
}

/* Hands the items of one event to the sink. Returns 0, the sink's error, or -ENOMEM. */
static int tl_event(struct timeline *tl, const struct merged *e)
{
    struct match_result r;
    uint32_t trace = (uint32_t)(e->trace - tl->d->traces);
    struct event_ctx c = {tl, e, &r, trace, thread_of(tl, e, trace)};
    tl->now = e->ts_ns;
    int err = at__match_event(&tl->match, e, &r);
    if (err < 0 || (err = settle_recv(&c)) < 0)
        return err;
    switch (e->ev->kind) {
    case AT_EV_STEP_BEGIN:
        return step_begin(&c);
    case AT_EV_STEP_END:
        return step_end(&c);
    case AT_EV_SEND:
        return (err = place(&c)) < 0 ? err : send(&c);
    default:
        if ((err = place(&c)) < 0 || (err = thread_declared(&c)) < 0)
            return err;
        if (r.role == MATCH_RECV && r.flow && !r.ends) { /* drawn at the thread's next event */
            c.th->recv =
                item_of(&c, &c.th->track, TL_INSTANT, TL_NAME_EVENT, e->ev->name, flow_of(tl, &r));
            return 0;
        }
        return emit(&c, &c.th->track, TL_INSTANT, TL_NAME_EVENT, e->ev->name, flow_of(tl, &r));
    }
}

/* Ends the open steps of one thread, on its thread's and its core's track. */
static int finish_thread(struct event_ctx *c)
{
    int err = draw_recv(c->tl, c->th, false);
    if (err == 0 && c->th->on_core != TL_NO_CORE)
        err = leave(c, c->th);
    for (; err == 0 && c->th->depth > 0; c->th->depth--)
        err = emit(c, &c->th->track, TL_END, TL_NAME_ACTOR, 0, (struct tl_item){0});
    return err;
}

/* Ends every slice still open (a filter or the end of the trace cut its step) at ts_ns.
 * Returns 0 or the sink's error. */
static int tl_finish(struct timeline *tl, uint64_t ts_ns)
{
    struct event_ctx c = {.tl = tl};
    int err = 0;
    tl->now = ts_ns > tl->now ? ts_ns : tl->now;
    for (c.trace = 0; err == 0 && c.trace < tl->d->ntraces; c.trace++)
        for (size_t i = 0; err == 0 && i < tl->d->traces[c.trace].nthreads; i++) {
            c.th = &tl->thread[c.trace][i];
            err = finish_thread(&c);
        }
    for (size_t i = 0; err == 0 && i < tl->nactors; i++)
        for (; err == 0 && tl->actors[i].open > 0; tl->actors[i].open--)
            err = emit(&c, &tl->actors[i].track, TL_END, TL_NAME_MSG, 0, (struct tl_item){0});
    return err;
}

/* ---- Names ------------------------------------------------------------------------------- */

static char *room(struct timeline *tl, size_t need)
{
    if (need > tl->scratch_cap) {
        char *grown = realloc(tl->scratch, need);
        if (!grown)
            return NULL;
        tl->scratch = grown;
        tl->scratch_cap = need;
    }
    return tl->scratch;
}

#define NUMBER_ROOM 48 /* a prefix and 20 digits, with margin */

/* Names come from programs and viewers want UTF-8: at__fmt_utf8 writes U+FFFD for a bad byte. */
#define TEXT_ROOM(len) (3 * (size_t)(len))

/* The name, or "prefixN" when there is none; the caller made room for it. */
static char *put_named(char *p, const struct name *n, const char *prefix, uint64_t id)
{
    if (n)
        return at__fmt_utf8(p, n->s, n->len);
    return at__fmt_u64(at__fmt_utf8(p, prefix, strlen(prefix)), id);
}

static const char *finish(struct timeline *tl, const char *end, size_t *len)
{
    *len = (size_t)(end - tl->scratch);
    return tl->scratch;
}

/* "send PING": the kind, then the message name when there is one. */
static const char *event_name(struct timeline *tl, const struct names *nm, const struct tl_item *it,
                              size_t *len)
{
    const char *builtin = at__kind_builtin(it->kind);
    const struct name *kind = builtin ? NULL : at__names_get(nm, AT_NAME_EVENT, it->kind);
    const struct name *msg = it->id ? at__names_get(nm, AT_NAME_MSG, it->id) : NULL;
    char *p = room(tl, 2 * NUMBER_ROOM + TEXT_ROOM((kind ? kind->len : 0) + (msg ? msg->len : 0)));
    if (!p)
        return NULL;
    char *start = p;
    p = builtin ? at__fmt_utf8(p, builtin, strlen(builtin)) : put_named(p, kind, "kind_", it->kind);
    if (it->id) {
        *p++ = ' ';
        p = put_named(p, msg, "name_", at__names_msg_number(nm, it->id));
    }
    *len = (size_t)(p - start);
    return start;
}

const char *at__tl_item_name(struct timeline *tl, const struct tl_item *it, size_t *len)
{
    const struct names *nm = &it->track->trace->names;
    if (it->what == TL_NAME_EVENT)
        return event_name(tl, nm, it, len);
    unsigned space = it->what == TL_NAME_MSG ? AT_NAME_MSG : AT_NAME_ACTOR;
    const struct name *n = it->id ? at__names_get(nm, space, it->id) : NULL;
    char *p = room(tl, NUMBER_ROOM + TEXT_ROOM(n ? n->len : 0));
    if (!p)
        return NULL;
    if (it->what == TL_NAME_MSG && it->id == 0)
        return finish(tl, AT_PUT(p, AT_UNNAMED), len);
    if (it->what == TL_NAME_MSG)
        return finish(tl, put_named(p, n, "name_", at__names_msg_number(nm, it->id)), len);
    return finish(tl, put_named(p, n, at__actor_prefix(it->id), at__actor_number(it->id)), len);
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *at__tl_track_name(struct timeline *tl, const struct tl_track *t, size_t *len)
{
    const struct trace *tr = t->trace;
    const char *exe = tr->process.exe ? basename_of(tr->process.exe) : "";
    const struct thread *th = NULL;
    const struct name *actor = NULL;
    uint32_t index;
    if (t->kind == TL_THREAD && at__idmap_get(&tr->thread_index, t->id, &index) == 0)
        th = &tr->threads[index];
    if (t->kind == TL_ACTOR)
        actor = at__names_get(&tr->names, AT_NAME_ACTOR, t->id);
    char *p =
        room(tl, 2 * NUMBER_ROOM + TEXT_ROOM(strlen(exe) + (th && th->name ? th->name_len : 0) +
                                             (actor ? actor->len : 0)));
    if (!p)
        return NULL;
    switch (t->kind) {
    case TL_PROCESS:
        p = *exe ? at__fmt_utf8(p, exe, strlen(exe)) : at__fmt_u64(AT_PUT(p, "pid "), t->id);
        break;
    case TL_THREAD:
        p = th && th->name ? at__fmt_utf8(p, th->name, th->name_len)
                           : at__fmt_u64(AT_PUT(p, "thread "), t->id);
        break;
    case TL_ACTOR:
        if (actor)
            p = AT_PUT(at__fmt_utf8(p, actor->s, actor->len), " (");
        p = at__fmt_utf8(p, at__actor_prefix(t->id), strlen(at__actor_prefix(t->id)));
        p = at__fmt_u64(p, at__actor_number(t->id));
        if (actor)
            p = AT_PUT(p, ")");
        break;
    default:
        p = at__fmt_u64(AT_PUT(p, "core "), t->id);
    }
    return finish(tl, p, len);
}

void *at__tl_format_create(const struct decode *d, size_t size,
                           int (*track)(void *state, const struct tl_track *t),
                           int (*item)(void *state, const struct tl_item *it))
{
    struct tl_format *f = calloc(1, size);
    if (f && tl_init(&f->tl, d, (struct tl_sink){track, item, f}) < 0) {
        free(f);
        f = NULL;
    }
    return f;
}

void at__tl_format_destroy(void *state)
{
    struct tl_format *f = state;
    if (f)
        tl_free(&f->tl);
    free(f);
}

int at__tl_format_event(struct out *o, const struct decode *d, const struct merged *e)
{
    struct tl_format *f = d->state;
    f->o = o;
    return tl_event(&f->tl, e);
}

/* The last time of the trace files, from their frame headers. */
static uint64_t trace_end(const struct decode *d)
{
    uint64_t end = 0;
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct trace *t = &d->traces[i];
        size_t hint = 0;
        for (size_t j = 0; j < t->nthreads; j++)
            for (size_t k = 0; k < t->threads[j].nframes; k++) {
                uint64_t last = at__clock_ns(&t->clock, t->threads[j].frames[k].last_tsc, &hint);
                end = last > end ? last : end;
            }
    }
    return end;
}

int at__tl_format_finish(struct out *o, const struct decode *d)
{
    struct tl_format *f = d->state;
    uint64_t cut = f->tl.now;
    if (d->filter && d->filter->to_ns > cut) {
        uint64_t end = trace_end(d);
        cut = d->filter->to_ns < end ? d->filter->to_ns : end > cut ? end : cut;
    }
    f->o = o;
    return tl_finish(&f->tl, cut);
}
