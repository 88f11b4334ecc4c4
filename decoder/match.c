/* Send -> handler matching.
 *
 * Every send becomes a pending entry, linked at the tail of its receiver's mailbox list and,
 * when it carries a message id, indexed by (trace, id). A recv takes its entry by id when it
 * has one, else the head of its actor's mailbox: with FIFO mailboxes the k-th send to an actor
 * is its k-th receive. The entry then waits in its thread's "held" slot for the step that
 * handles it, which on every runtime we know follows on the same thread; a runtime that
 * records steps without recvs has its steps take entries directly the same way. A held entry
 * that no step claims (the next recv on the thread comes first) was handled at its recv.
 *
 * Memory is the messages in flight: an entry is freed when its step (or the next recv) comes.
 * Entries whose recv never appears (lost, or still queued when the trace ends) stay, and are
 * counted by at__match_unhandled. */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "at_events.h"
#include "match.h"

#define NONE UINT32_MAX

int at__match_init(struct matcher *m, const struct trace *traces, size_t ntraces)
{
    *m = (struct matcher){.traces = traces, .ntraces = ntraces, .free_list = NONE, .next_flow = 1};
    m->held = calloc(ntraces ? ntraces : 1, sizeof *m->held);
    if (!m->held)
        return -ENOMEM;
    for (size_t i = 0; i < ntraces; i++) {
        size_t n = traces[i].nthreads;
        m->held[i] = malloc((n ? n : 1) * sizeof **m->held);
        if (!m->held[i]) {
            at__match_free(m);
            return -ENOMEM;
        }
        for (size_t j = 0; j < n; j++)
            m->held[i][j] = (struct held){.entry = NONE};
    }
    return 0;
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
    if (p->actor == NONE)
        return;
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

static int on_send(struct matcher *m, const struct merged *e, uint32_t trace,
                   struct match_result *r)
{
    const struct at_event *ev = e->ev;
    r->role = MATCH_SEND;
    if (r->actor == MATCH_NO_ACTOR && ev->msg == 0)
        return 0; /* nothing could ever identify its receive */
    uint32_t index;
    if (new_entry(m, &index) < 0)
        return -ENOMEM;
    r->flow = m->next_flow++;
    m->waiting++;
    m->entries[index] = (struct pending){.flow = r->flow,
                                         .send_ns = e->ts_ns,
                                         .sender = ev->peer,
                                         .msg = ev->msg,
                                         .name = ev->name,
                                         .actor = r->actor};
    if (r->actor != MATCH_NO_ACTOR) {
        enqueue(m, index);
        r->depth = m->actors[r->actor].depth;
    }
    if (ev->msg == 0)
        return 0;
    struct hkey key = {trace, ev->msg};
    uint32_t *old = at__hmap_get(&m->by_msg, key);
    if (old)
        supersede(m, *old);
    return at__hmap_put(&m->by_msg, key, index);
}

/* The pending send that a recv (or a step of a runtime without recvs) takes: by message id
 * when the event has one, else the oldest in the actor's mailbox. NONE when there is none. */
static uint32_t take(struct matcher *m, const struct at_event *ev, uint32_t trace, uint32_t actor)
{
    uint32_t index = NONE;
    if (ev->msg != 0) {
        uint32_t *found = at__hmap_get(&m->by_msg, (struct hkey){trace, ev->msg});
        if (found) {
            index = *found;
            m->by_id++;
        }
    } else if (actor != MATCH_NO_ACTOR && m->actors[actor].head != NONE) {
        index = m->actors[actor].head;
        m->by_order++;
    }
    if (index == NONE)
        return NONE;
    if (m->entries[index].msg != 0)
        at__hmap_del(&m->by_msg, (struct hkey){trace, m->entries[index].msg});
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
}

static struct held *held_of(const struct matcher *m, const struct merged *e, uint32_t trace)
{
    return &m->held[trace][e->thread - e->trace->threads];
}

static void on_recv(struct matcher *m, const struct merged *e, uint32_t trace,
                    struct match_result *r)
{
    struct held *h = held_of(m, e, trace);
    r->role = MATCH_RECV;
    if (h->entry != NONE)
        release(m, h->entry); /* no step claimed it: it was handled at its recv */
    h->entry = take(m, e->ev, trace, r->actor);
    if (h->entry == NONE) {
        m->recvs_unmatched++;
        return;
    }
    h->recv_ns = e->ts_ns;
    found(m, h->entry, r);
    if (r->actor != MATCH_NO_ACTOR)
        r->depth = m->actors[r->actor].depth;
}

/* Whether the held entry is the message this step handles. */
static bool claims(const struct pending *p, const struct at_event *ev, uint32_t actor)
{
    bool same_actor = p->actor == MATCH_NO_ACTOR || p->actor == actor;
    bool same_msg = ev->msg == 0 || p->msg == 0 || p->msg == ev->msg;
    return same_actor && same_msg;
}

static void on_step(struct matcher *m, const struct merged *e, uint32_t trace,
                    struct match_result *r)
{
    struct held *h = held_of(m, e, trace);
    uint32_t index = h->entry;
    r->role = MATCH_STEP;
    if (index != NONE && !claims(&m->entries[index], e->ev, r->actor)) {
        release(m, index);
        index = NONE;
    }
    h->entry = NONE;
    if (index == NONE)
        index = take(m, e->ev, trace, r->actor);
    if (index == NONE) {
        m->steps_unmatched++;
        return;
    }
    found(m, index, r);
    if (r->actor != MATCH_NO_ACTOR)
        r->depth = m->actors[r->actor].depth;
    release(m, index);
}

int at__match_event(struct matcher *m, const struct merged *e, struct match_result *r)
{
    const struct at_event *ev = e->ev;
    uint32_t trace = (uint32_t)(e->trace - m->traces);
    *r = (struct match_result){.role = MATCH_NONE, .actor = MATCH_NO_ACTOR};
    if (ev->actor != 0 && actor_of(m, trace, ev->actor, &r->actor) < 0)
        return -ENOMEM;
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
    return m->waiting + m->superseded;
}

void at__match_free(struct matcher *m)
{
    for (size_t i = 0; m->held && i < m->ntraces; i++)
        free(m->held[i]);
    free(m->held);
    free(m->actors);
    free(m->entries);
    at__hmap_free(&m->actor_index);
    at__hmap_free(&m->by_msg);
    *m = (struct matcher){0};
}
