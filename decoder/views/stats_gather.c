/* --format stats: gathers, as the events stream past, counts per kind, per actor, per message
 * name and per thread; send -> handled latency (through match.c) into histograms; each
 * actor's mailbox depth, its maximum and its maximum in each of STATS_SLOTS slices of the run;
 * time in steps; and the time each thread spent parked: from its park to its next event (or,
 * for a thread whose last event is a park, to the unpark that woke it, else the end of the
 * run); and sends by the function that made them, from their call stacks ("top senders").
 * Nothing is formatted per event: stats_report.c writes it all at the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "stacks.h"
#include "stats.h"

static struct stat_actor *grow_actors(struct stats *st, uint32_t index)
{
    if (at__array_reserve_zeroed((void **)&st->actors, &st->nactors, index, sizeof *st->actors))
        return NULL;
    return &st->actors[index];
}

static inline struct stat_actor *actor_at(struct stats *st, uint32_t index)
{
    return index < st->nactors ? &st->actors[index] : grow_actors(st, index);
}

static struct stat_msg *new_msg(struct stats *st, uint32_t trace, uint32_t name)
{
    if (at__array_reserve((void **)&st->msgs, &st->msgs_cap, st->nmsgs, sizeof *st->msgs) < 0)
        return NULL;
    st->msgs[st->nmsgs] = (struct stat_msg){.trace = trace, .name = name};
    return &st->msgs[st->nmsgs++];
}

/* The entry of a message name, added when new. */
static struct stat_msg *msg_lookup(struct stats *st, uint32_t trace, uint32_t name)
{
    if (name < STATS_NAME_CACHE) {
        struct stat_msg *m = new_msg(st, trace, name);
        if (m)
            st->name_cache[trace][name] = (uint32_t)st->nmsgs;
        return m;
    }
    struct hkey key = {trace, name};
    uint32_t *found = at__hmap_get(&st->msg_index, key);
    if (found)
        return &st->msgs[*found];
    if (at__hmap_put(&st->msg_index, key, (uint32_t)st->nmsgs) < 0)
        return NULL;
    return new_msg(st, trace, name);
}

/* The slot of a time. Events come in time order, so the current slot only moves forward and
 * is found by comparing with its end, without a division per event. */
/* The entry of a message name: small ids (the usual case) go through a direct table. */
static inline struct stat_msg *msg_of(struct stats *st, uint32_t trace, uint32_t name)
{
    uint32_t slot = name < STATS_NAME_CACHE ? st->name_cache[trace][name] : 0;
    return slot ? &st->msgs[slot - 1] : msg_lookup(st, trace, name);
}

static uint32_t slot_of(struct stats *st, uint64_t ns)
{
    while (st->slot < STATS_SLOTS - 1 && ns >= st->slot_end[st->slot])
        st->slot++;
    return st->slot;
}

static void slot_bounds(struct stats *st)
{
    uint64_t span = st->last_ns - st->first_ns;
    for (uint32_t s = 0; s < STATS_SLOTS; s++)
        st->slot_end[s] =
            st->first_ns + (uint64_t)((unsigned __int128)span * (s + 1) / STATS_SLOTS);
}

/* The depth holds from one change to the next, so slots passed without a change keep it. */
static void set_depth(struct stats *st, struct stat_actor *a, uint64_t ns, uint32_t depth)
{
    uint32_t slot = slot_of(st, ns);
    if (slot < a->last_slot)
        slot = a->last_slot;
    for (uint32_t s = a->last_slot + 1; s <= slot; s++)
        a->depth_slots[s] = a->depth;
    if (depth > a->depth_slots[slot])
        a->depth_slots[slot] = depth;
    a->depth = depth;
    a->last_slot = slot;
}

static void on_thread(struct stats *st, const struct merged *e, uint32_t trace, uint32_t actor)
{
    struct stat_thread *t = &st->threads[trace][e->thread - e->trace->threads];
    if (t->events++ == 0)
        t->first_ns = e->ts_ns;
    t->last_ns = e->ts_ns;
    if (t->parked) {
        t->parked_ns += e->ts_ns - t->park_since;
        t->parked = false;
    }
    if (e->ev->kind == AT_EV_PARK) {
        t->parked = true;
        t->park_since = e->ts_ns;
        t->park_actor = actor;
        t->parks++;
    }
}

static int on_send(struct stats *st, const struct merged *e, uint32_t trace, struct stat_actor *a,
                   const struct match_result *r)
{
    uint32_t sender;
    struct stat_actor *s;
    if (a) {
        a->received++;
        set_depth(st, a, e->ts_ns, r->depth);
    }
    if (e->ev->peer) {
        if (at__match_actor(&st->match, trace, e->ev->peer, &sender) < 0 ||
            !(s = actor_at(st, sender)))
            return -ENOMEM;
        s->sent++;
    }
    return 0;
}

/* A step that handled a traced send: the latency goes to the send's name and the actor. */
static int on_handled(struct stats *st, const struct merged *e, uint32_t trace,
                      struct stat_actor *a, const struct match_result *r)
{
    struct stat_msg *m = msg_of(st, trace, r->name);
    uint64_t latency = e->ts_ns - r->send_ns;
    if (!m || at__hist_add(&m->latency, latency) < 0 || (a && at__hist_add(&a->latency, latency)))
        return -ENOMEM;
    return 0;
}

/* A recv of a traced send: the send -> recv latency goes to the send's name; a fan-out
 * send's later deliveries count for their receivers as the first did at the send. */
static int on_recv(struct stats *st, const struct merged *e, uint32_t trace, struct stat_actor *a,
                   const struct match_result *r)
{
    if (r->flow == 0)
        return 0;
    if (a) {
        a->received += r->delivery;
        set_depth(st, a, e->ts_ns, r->depth);
    }
    struct stat_msg *m = msg_of(st, trace, r->name);
    return m ? at__hist_add(&m->recv_latency, e->ts_ns - r->send_ns) : -ENOMEM;
}

/* The message name a step handled: its send's, else its own; NULL when it has neither. */
static int handled_msg(struct stats *st, const struct merged *e, uint32_t trace,
                       const struct match_result *r, struct stat_msg **out)
{
    *out = NULL;
    if (r->flow == 0 && e->ev->name == 0)
        return 0;
    *out = msg_of(st, trace, r->flow ? r->name : e->ev->name);
    return *out ? 0 : -ENOMEM;
}

static int on_step(struct stats *st, const struct merged *e, uint32_t trace, struct stat_actor *a,
                   const struct match_result *r)
{
    struct stat_msg *m;
    if (handled_msg(st, e, trace, r, &m) < 0)
        return -ENOMEM;
    if (m)
        m->handled++;
    if (a)
        a->steps++;
    if (a && a->open++ < STATS_MAX_NESTED)
        a->step[a->open - 1] =
            (struct stat_step){.since = e->ts_ns, .msg = m ? (uint32_t)(m - st->msgs) + 1 : 0};
    if (r->flow == 0)
        return 0;
    if (a)
        set_depth(st, a, e->ts_ns, r->depth);
    return on_handled(st, e, trace, a, r);
}

/* Time in steps: a step's own from its begin to its end for its message name; the actor's
 * while any of its steps is open, so nested steps count once. */
static void on_step_end(struct stats *st, const struct merged *e, struct stat_actor *a)
{
    if (!a || a->open == 0)
        return;
    if (--a->open >= STATS_MAX_NESTED)
        return;
    const struct stat_step *s = &a->step[a->open];
    uint64_t took = e->ts_ns - s->since;
    if (s->msg)
        st->msgs[s->msg - 1].handling_ns += took;
    if (a->open == 0)
        a->busy_ns += took;
}

/* Counts sends and recvs by message name (steps count by the message they handled). */
static int count_msg(struct stats *st, const struct at_event *ev, uint32_t trace)
{
    if (ev->kind != AT_EV_SEND && ev->kind != AT_EV_RECV)
        return 0;
    struct stat_msg *m = msg_of(st, trace, ev->name);
    if (!m)
        return -ENOMEM;
    m->sent += ev->kind == AT_EV_SEND;
    m->received += ev->kind == AT_EV_RECV;
    return 0;
}

/* A send with a stack counts for its caller frame's function (or, without a function, its
 * address). */
static int count_sender(struct stats *st, const struct merged *e, uint32_t trace)
{
    st->sends++;
    const struct stack_frame *f =
        e->stack && e->stack != AT_STACK_SKIPPED ? at__stacks_caller(e->trace, e->stack) : NULL;
    if (!f)
        return 0;
    st->sends_stacked++;
    struct hkey key = {(uint64_t)trace << 32 | f->module,
                       f->func_len ? f->addr - f->offset : f->addr};
    uint32_t *found = at__hmap_get(&st->sender_index, key);
    if (found) {
        st->senders[*found].sends++;
        return 0;
    }
    if (at__array_reserve((void **)&st->senders, &st->senders_cap, st->nsenders,
                          sizeof *st->senders) < 0 ||
        at__hmap_put(&st->sender_index, key, (uint32_t)st->nsenders) < 0)
        return -ENOMEM;
    st->senders[st->nsenders++] = (struct stat_sender){trace, e->stack, 1};
    return 0;
}

static int stats_event(struct out *o, const struct decode *d, const struct merged *e)
{
    (void)o;
    struct stats *st = d->state;
    const struct at_event *ev = e->ev;
    uint32_t trace = (uint32_t)(e->trace - d->traces);
    struct match_result r;
    struct stat_actor *a = NULL;
    st->kinds[st->kind_slot[trace][ev->kind]]++;
    if (at__match_event(&st->match, e, &r) < 0 ||
        (r.actor != MATCH_NO_ACTOR && !(a = actor_at(st, r.actor))) || count_msg(st, ev, trace) < 0)
        return -ENOMEM;
    on_thread(st, e, trace, r.actor);
    if (a)
        a->events++;
    switch (ev->kind) {
    case AT_EV_SEND:
        if (count_sender(st, e, trace) < 0)
            return -ENOMEM;
        return on_send(st, e, trace, a, &r);
    case AT_EV_RECV:
        return on_recv(st, e, trace, a, &r);
    case AT_EV_STEP_BEGIN:
        return on_step(st, e, trace, a, &r);
    case AT_EV_STEP_END:
        on_step_end(st, e, a);
        return 0;
    case AT_EV_UNPARK:
        if (a)
            a->last_unpark = e->ts_ns;
        return 0;
    default:
        return 0;
    }
}

/* The run's first and last event times from the frame headers (within --from/--to). */
static void run_span(struct stats *st, const struct decode *d)
{
    st->first_ns = UINT64_MAX;
    for (size_t i = 0; i < d->ntraces; i++) {
        const struct trace *t = &d->traces[i];
        size_t hint = 0;
        for (size_t j = 0; j < t->nthreads; j++) {
            for (size_t k = 0; k < t->threads[j].nframes; k++) {
                const struct frame_ref *f = &t->threads[j].frames[k];
                uint64_t first = at__clock_ns(&t->clock, f->first_tsc, &hint);
                uint64_t last = at__clock_ns(&t->clock, f->last_tsc, &hint);
                st->first_ns = first < st->first_ns ? first : st->first_ns;
                st->last_ns = last > st->last_ns ? last : st->last_ns;
            }
        }
    }
    if (d->filter && d->filter->from_ns > st->first_ns)
        st->first_ns = d->filter->from_ns;
    if (d->filter && d->filter->to_ns < st->last_ns)
        st->last_ns = d->filter->to_ns;
    if (st->first_ns > st->last_ns)
        st->first_ns = st->last_ns;
    slot_bounds(st);
}

static bool same_name(const struct name *a, const struct name *b)
{
    return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
}

/* The slot of a registered kind named n (number k in its trace): the slot of that name, else k
 * when free, else the first free one; k when unnamed or no slot is free. */
static unsigned kind_slot(struct stats *st, const struct name *n, unsigned k)
{
    if (!n || !n->s)
        return k;
    for (unsigned s = AT_EV_FIRST_REGISTERED; s < 256; s++)
        if (st->kind_names[s] && same_name(st->kind_names[s], n))
            return s;
    for (unsigned s = k, i = 0; i < 256 - AT_EV_FIRST_REGISTERED; i++) {
        if (!st->kind_names[s]) {
            st->kind_names[s] = n;
            return s;
        }
        s = s == 255 ? AT_EV_FIRST_REGISTERED : s + 1;
    }
    return k;
}

/* Registered kinds are numbered by each process: "Events by kind" counts each name once over
 * every trace (zmq_bind in one file may be another's zmq_connect's number). */
static void map_kinds(struct stats *st, const struct decode *d)
{
    for (size_t i = 0; i < d->ntraces; i++)
        for (unsigned k = 0; k < 256; k++) {
            const struct name *n = at__names_get(&d->traces[i].names, AT_NAME_EVENT, k);
            st->kind_slot[i][k] = (uint8_t)(k < AT_EV_FIRST_REGISTERED ? k : kind_slot(st, n, k));
        }
}

static void stats_destroy(void *state)
{
    struct stats *st = state;
    if (!st)
        return;
    for (size_t i = 0; i < st->nactors; i++)
        at__hist_free(&st->actors[i].latency);
    for (size_t i = 0; i < st->nmsgs; i++) {
        at__hist_free(&st->msgs[i].latency);
        at__hist_free(&st->msgs[i].recv_latency);
    }
    for (size_t i = 0; i < st->match.ntraces; i++) {
        free(st->threads ? st->threads[i] : NULL);
        free(st->name_cache ? st->name_cache[i] : NULL);
    }
    free(st->threads);
    free(st->name_cache);
    free(st->kind_slot);
    free(st->actors);
    free(st->msgs);
    at__hmap_free(&st->msg_index);
    free(st->senders);
    at__hmap_free(&st->sender_index);
    at__match_free(&st->match);
    free(st);
}

static void *stats_create(const struct decode *d)
{
    struct stats *st = calloc(1, sizeof *st);
    size_t n = d->ntraces ? d->ntraces : 1;
    if (!st || at__match_init(&st->match, d) < 0) {
        free(st);
        return NULL;
    }
    st->threads = calloc(n, sizeof *st->threads);
    st->name_cache = calloc(n, sizeof *st->name_cache);
    st->kind_slot = calloc(n, sizeof *st->kind_slot);
    bool ok = st->threads && st->name_cache && st->kind_slot;
    for (size_t i = 0; ok && i < d->ntraces; i++) {
        size_t threads = d->traces[i].nthreads ? d->traces[i].nthreads : 1;
        st->threads[i] = calloc(threads, sizeof **st->threads);
        st->name_cache[i] = calloc(STATS_NAME_CACHE, sizeof **st->name_cache);
        ok = st->threads[i] && st->name_cache[i];
    }
    if (!ok) {
        stats_destroy(st);
        return NULL;
    }
    map_kinds(st, d);
    run_span(st, d);
    return st;
}

static int stats_end(struct out *o, const struct decode *d, const struct summary *s)
{
    return at__stats_report(o, d, d->state, s);
}

const struct output_ops at__stats_ops = {
    .name = "stats",
    .create = stats_create,
    .destroy = stats_destroy,
    .event = stats_event,
    .end = stats_end,
};
