/* Send -> handler matching.
 *
 * Every send becomes a pending entry, linked at the tail of its receiver's mailbox list and,
 * when it carries a message id, indexed by (trace, id). A recv or step with an id takes the
 * entry of that id. Without one, in a trace whose sends carry no ids, it takes the head of its
 * actor's mailbox: with FIFO mailboxes the k-th send to an actor is its k-th receive. Steps
 * whose path says they handle no message (timer, poller, task) take nothing.
 *
 * A message's recv and the step that handles it come on one thread, in either order: the
 * first takes the entry and leaves it in the thread's "held" slot for the second, which ends
 * the flow. Usually the recv comes first (the runtime takes the message out, then runs the
 * handler); a zloop reader's step begins, then its handler receives, and then the step has
 * the message's id. A recv's held entry that the thread's next event does not claim is
 * released: the message was handled at its recv, by no step it can be tied to (a runtime that
 * records no steps; CZMQ outside a zloop reader). A step's held entry waits for its recv until
 * the thread's next recv or step.
 *
 * Memory is the messages in flight: an entry is freed when its step and recv have come, or when
 * it is given up (a later send with its id, or its actor's mailbox is full: see
 * MATCH_MAILBOX_CAP). Entries whose recv never appears stay, counted by at__match_unhandled. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "at_format.h"
#include "match.h"
#include "sockets.h"

#define NONE UINT32_MAX

/* Path names of steps that run for something other than a message. */
static const char *const no_msg_paths[] = {"timer", "poller", "task"};

static bool handles_no_msg(const struct name *n)
{
    for (size_t i = 0; n && i < sizeof no_msg_paths / sizeof *no_msg_paths; i++)
        if (n->len == strlen(no_msg_paths[i]) && memcmp(n->s, no_msg_paths[i], n->len) == 0)
            return true;
    return false;
}

static int init_trace(struct matcher *m, size_t i)
{
    size_t n = m->traces[i].nthreads;
    m->held[i] = malloc((n ? n : 1) * sizeof **m->held);
    if (!m->held[i])
        return -ENOMEM;
    for (size_t j = 0; j < n; j++)
        m->held[i][j] = (struct held){.entry = NONE};
    for (unsigned path = 1; path < 256; path++)
        if (handles_no_msg(at__names_get(&m->traces[i].names, AT_NAME_PATH, path)))
            m->no_msg[i][path / 64] |= 1ull << path % 64;
    return 0;
}

int at__match_init(struct matcher *m, const struct decode *d)
{
    size_t ntraces = d->ntraces;
    *m = (struct matcher){
        .d = d, .traces = d->traces, .ntraces = ntraces, .free_list = NONE, .next_flow = 1};
    size_t n = ntraces ? ntraces : 1;
    m->held = calloc(n, sizeof *m->held);
    m->ids = calloc(n, sizeof *m->ids);
    m->no_msg = calloc(n, sizeof *m->no_msg);
    int err = m->held && m->ids && m->no_msg ? 0 : -ENOMEM;
    for (size_t i = 0; err == 0 && i < ntraces; i++)
        err = init_trace(m, i);
    if (err < 0)
        at__match_free(m);
    return err;
}

/* Grows a table whose indexes must stay below NONE. */
static int reserve(void **array, size_t *cap, uint32_t n, size_t size)
{
    return n == NONE - 1 ? -ENOMEM : at__array_reserve(array, cap, n, size);
}

/* Adds the actor of the key; sets *index. Returns 0 or -ENOMEM. */
static int add_actor(struct matcher *m, struct hkey key, uint32_t *index)
{
    if (reserve((void **)&m->actors, &m->actors_cap, m->nactors, sizeof *m->actors) < 0 ||
        at__hmap_put(&m->actor_index, key, m->nactors) < 0)
        return -ENOMEM;
    m->actors[m->nactors] =
        (struct match_actor){.id = key.b, .trace = (uint32_t)key.a, .head = NONE, .tail = NONE};
    *index = m->nactors++;
    return 0;
}

/* The hash map's answer, kept in cache slot `slot`. */
static int lookup(struct matcher *m, size_t slot, uint32_t trace, uint64_t id, uint32_t *index)
{
    struct hkey key = {trace, id};
    uint32_t *found = at__hmap_get(&m->actor_index, key);
    if (found)
        *index = *found;
    else if (add_actor(m, key, index) < 0)
        return -ENOMEM;
    m->cache[slot].id = id;
    m->cache[slot].trace = trace;
    m->cache[slot].index = *index + 1;
    return 0;
}

/* Every event looks its actor up, and a run has few busy actors: a small direct-mapped cache
 * in front of the hash map answers most lookups, inline. */
static inline int actor_of(struct matcher *m, uint32_t trace, uint64_t id, uint32_t *index)
{
    size_t slot = (size_t)((id ^ trace) * 0x9E3779B97F4A7C15ull >> 58);
    if (m->cache[slot].index && m->cache[slot].id == id && m->cache[slot].trace == trace) {
        *index = m->cache[slot].index - 1;
        return 0;
    }
    return lookup(m, slot, trace, id, index);
}

int at__match_actor(struct matcher *m, uint32_t trace, uint64_t id, uint32_t *index)
{
    return actor_of(m, trace, id, index);
}

static int new_entry(struct matcher *m, uint32_t *index)
{
    if (m->free_list != NONE) {
        *index = m->free_list;
        m->free_list = m->entries[*index].next;
        return 0;
    }
    if (reserve((void **)&m->entries, &m->entries_cap, m->nentries, sizeof *m->entries) < 0)
        return -ENOMEM;
    *index = m->nentries++;
    return 0;
}

static void release(struct matcher *m, uint32_t index)
{
    m->entries[index].next = m->free_list;
    m->free_list = index;
}

static void enqueue(struct matcher *m, uint32_t index)
{
    struct pending *p = &m->entries[index];
    struct match_actor *a = &m->actors[p->actor];
    p->prev = a->tail;
    p->next = NONE;
    if (a->tail != NONE)
        m->entries[a->tail].next = index;
    else
        a->head = index;
    a->tail = index;
    if (++a->depth > a->max_depth)
        a->max_depth = a->depth;
}

static void dequeue(struct matcher *m, uint32_t index)
{
    struct pending *p = &m->entries[index];
    struct match_actor *a = &m->actors[p->actor];
    if (p->prev != NONE)
        m->entries[p->prev].next = p->next;
    else
        a->head = p->next;
    if (p->next != NONE)
        m->entries[p->next].prev = p->prev;
    else
        a->tail = p->prev;
    a->depth--;
}

/* A message id seen again before its first send was handled: the first one is given up. */
static void supersede(struct matcher *m, uint32_t old)
{
    dequeue(m, old);
    release(m, old);
    m->waiting--;
    m->superseded++;
}

/* The oldest send of a full mailbox is given up for a new one. */
static void evict(struct matcher *m, uint32_t trace, struct match_actor *a)
{
    uint32_t old = a->head;
    if (m->entries[old].msg != 0)
        at__hmap_del(&m->by_msg, (struct hkey){trace, m->entries[old].msg});
    dequeue(m, old);
    release(m, old);
    m->waiting--;
    m->evicted++;
}

/* The mailbox a send goes to: its receiver's, or the trace's unknown receiver's. */
static int mailbox_of(struct matcher *m, uint32_t trace, const struct match_result *r,
                      uint32_t *index)
{
    if (r->actor != MATCH_NO_ACTOR) {
        *index = r->actor;
        return 0;
    }
    return actor_of(m, trace, 0, index);
}

/* A ZeroMQ socket message received in another trace (sockets.c) goes to its receiver's
 * mailbox there, under the name its recv has there, and that trace's recv takes it by id: its
 * flow crosses the processes. */
static int to_remote(struct matcher *m, uint32_t *trace, uint32_t *name, struct match_result *r)
{
    struct sockets_remote other;
    if (!at__sockets_remote(m->d, &other))
        return 0;
    *trace = other.trace;
    *name = other.name;
    return other.actor ? actor_of(m, other.trace, other.actor, &r->actor) : 0;
}

static int on_send(struct matcher *m, const struct merged *e, uint32_t trace,
                   struct match_result *r)
{
    const struct at_event *ev = e->ev;
    uint32_t box, index, name = ev->name;
    r->role = MATCH_SEND;
    if (to_remote(m, &trace, &name, r) < 0)
        return -ENOMEM;
    if (r->actor == MATCH_NO_ACTOR && ev->msg == 0) {
        m->untracked++; /* nothing could ever identify its receive */
        return 0;
    }
    if (mailbox_of(m, trace, r, &box) < 0)
        return -ENOMEM;
    struct match_actor *a = &m->actors[box];
    if (a->depth >= MATCH_MAILBOX_CAP && !a->takes) {
        m->untracked++; /* a sink: keeping its messages would only cost memory */
        r->depth = a->depth;
        return 0;
    }
    if (a->depth >= MATCH_MAILBOX_CAP)
        evict(m, trace, a);
    if (new_entry(m, &index) < 0)
        return -ENOMEM;
    r->flow = m->next_flow;
    r->flows = ev->msg ? at__sockets_deliveries(m->d) : 1;
    m->next_flow += r->flows;
    m->waiting++;
    m->entries[index] = (struct pending){.flow = r->flow,
                                         .send_ns = e->ts_ns,
                                         .sender = ev->peer,
                                         .msg = ev->msg,
                                         .name = name,
                                         .actor = box,
                                         .left = r->flows};
    enqueue(m, index);
    r->depth = m->actors[box].depth;
    if (ev->msg == 0)
        return 0;
    m->ids[trace] = true;
    struct hkey key = {trace, ev->msg};
    uint32_t *old = at__hmap_get(&m->by_msg, key);
    if (old)
        supersede(m, *old);
    return at__hmap_put(&m->by_msg, key, index);
}

/* A delivery of a send that has more to come: a copy of its entry, with the next of its
 * flows, outside any mailbox; the send stays for the others. NONE on -ENOMEM. */
static uint32_t deliver(struct matcher *m, uint32_t send, uint32_t actor)
{
    uint32_t index;
    if (new_entry(m, &index) < 0)
        return NONE;
    struct pending *p = &m->entries[send];
    m->entries[index] = *p;
    m->entries[index].later = p->taken;
    m->entries[index].msg = 0; /* not indexed */
    if (actor != MATCH_NO_ACTOR)
        m->entries[index].actor = actor;
    p->taken = true;
    p->flow++;
    p->left--;
    return index;
}

/* The pending send that a recv or step takes: by message id when the event has one, else, in
 * a trace without ids, the oldest in the actor's mailbox. NONE when there is none. */
static uint32_t take(struct matcher *m, const struct at_event *ev, uint32_t trace, uint32_t actor)
{
    uint32_t index = NONE;
    if (ev->msg != 0) {
        uint32_t *found = at__hmap_get(&m->by_msg, (struct hkey){trace, ev->msg});
        if (found) {
            index = *found;
            m->by_id++;
        }
        if (found && m->entries[index].left > 1)
            return deliver(m, index, actor);
    } else if (!m->ids[trace] && actor != MATCH_NO_ACTOR && m->actors[actor].head != NONE) {
        index = m->actors[actor].head;
        m->by_order++;
    }
    if (index == NONE)
        return NONE;
    if (m->entries[index].msg != 0)
        at__hmap_del(&m->by_msg, (struct hkey){trace, m->entries[index].msg});
    m->entries[index].later = m->entries[index].taken;
    m->actors[m->entries[index].actor].takes = true;
    dequeue(m, index);
    m->waiting--;
    return index;
}

static void found(const struct matcher *m, uint32_t index, struct match_result *r)
{
    const struct pending *p = &m->entries[index];
    r->flow = p->flow;
    r->send_ns = p->send_ns;
    r->sender = p->sender;
    r->name = p->name;
    r->delivery = p->later;
    if (r->actor != MATCH_NO_ACTOR)
        r->depth = m->actors[r->actor].depth;
}

static struct held *held_of(const struct matcher *m, const struct merged *e, uint32_t trace)
{
    return &m->held[trace][e->thread - e->trace->threads];
}

/* Empties the thread's held slot. */
static void drop_held(struct matcher *m, struct held *h)
{
    if (h->entry != NONE)
        release(m, h->entry);
    h->entry = NONE;
}

static void on_recv(struct matcher *m, const struct merged *e, uint32_t trace,
                    struct match_result *r)
{
    struct held *h = held_of(m, e, trace);
    uint64_t msg = e->ev->msg;
    r->role = MATCH_RECV;
    if (h->entry != NONE && h->by_step && msg != 0 && m->entries[h->entry].msg == msg) {
        found(m, h->entry, r); /* its step began first: the flow ends here */
        r->ends = true;
        drop_held(m, h);
        return;
    }
    drop_held(m, h);
    h->entry = take(m, e->ev, trace, r->actor);
    h->by_step = false;
    if (h->entry == NONE)
        m->recvs_unmatched++;
    else
        found(m, h->entry, r);
}

/* Whether the entry a recv held is the message this step handles. */
static bool claims(const struct matcher *m, uint32_t entry, const struct at_event *ev,
                   uint32_t actor)
{
    const struct pending *p = &m->entries[entry];
    bool same_actor = p->actor == actor || m->actors[p->actor].id == 0;
    bool same_msg = ev->msg == 0 || p->msg == 0 || p->msg == ev->msg;
    return same_actor && same_msg;
}

static void on_step(struct matcher *m, const struct merged *e, uint32_t trace,
                    struct match_result *r)
{
    struct held *h = held_of(m, e, trace);
    uint8_t path = e->ev->path;
    r->role = MATCH_STEP;
    if (m->no_msg[trace][path / 64] >> path % 64 & 1) {
        m->steps_without_msg++;
        return;
    }
    if (h->entry != NONE && !h->by_step && claims(m, h->entry, e->ev, r->actor)) {
        found(m, h->entry, r); /* its recv came first: the flow ends here */
        r->ends = true;
        drop_held(m, h);
        return;
    }
    drop_held(m, h);
    uint32_t index = take(m, e->ev, trace, r->actor);
    if (index == NONE) {
        m->steps_unmatched++;
        return;
    }
    found(m, index, r);
    if (e->ev->msg != 0) { /* by id: its recv may follow, and then ends the flow */
        h->entry = index;
        h->by_step = true;
        return;
    }
    r->ends = true;
    release(m, index);
}

int at__match_event(struct matcher *m, const struct merged *e, struct match_result *r)
{
    const struct at_event *ev = e->ev;
    uint32_t trace = (uint32_t)(e->trace - m->traces);
    *r = (struct match_result){.role = MATCH_NONE, .actor = MATCH_NO_ACTOR};
    if (ev->actor != 0 && actor_of(m, trace, ev->actor, &r->actor) < 0)
        return -ENOMEM;
    struct held *h = held_of(m, e, trace);
    if (h->entry != NONE && !h->by_step && ev->kind != AT_EV_STEP_BEGIN)
        drop_held(m, h); /* no step handles the message its recv took: it ended at the recv */
    switch (ev->kind) {
    case AT_EV_SEND:
        return on_send(m, e, trace, r);
    case AT_EV_RECV:
        on_recv(m, e, trace, r);
        return 0;
    case AT_EV_STEP_BEGIN:
        on_step(m, e, trace, r);
        return 0;
    default:
        return 0;
    }
}

uint64_t at__match_unhandled(const struct matcher *m)
{
    return m->waiting + m->superseded + m->evicted + m->untracked;
}

void at__match_free(struct matcher *m)
{
    for (size_t i = 0; m->held && i < m->ntraces; i++)
        free(m->held[i]);
    free(m->held);
    free(m->ids);
    free(m->no_msg);
    free(m->actors);
    free(m->entries);
    at__hmap_free(&m->actor_index);
    at__hmap_free(&m->by_msg);
    *m = (struct matcher){0};
}
