/* ZeroMQ sockets: who receives a message sent on an ordinary socket.
 *
 * A first pass over every event collects each socket's binds and connects and every send and
 * recv that carries a fingerprint (docs/FORMAT.md: bit 63 set, the socket's number, the first
 * frame's size and a hash of its first bytes). A connect is joined to the bind of the same
 * endpoint: inproc in the same trace, ipc in any trace, tcp by port across traces (bind_for()),
 * for the time both were live: from the connect to its disconnect or the bind's unbind (a
 * link). Then each recv takes, among the sockets joined to its own, the oldest send with its
 * fingerprint not yet taken that was sent while the two were linked: the k-th send and the
 * k-th recv of one fingerprint on the two ends of a connection pair up, FIFO. A PUB or XPUB
 * socket's send is taken once by each joined socket (fan-out), any other socket's by one recv.
 * The second pass (the output) rewrites the events through at__sockets_apply. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "hmap.h"
#include "out.h"
#include "sockets.h"

#define NONE         UINT32_MAX
#define FINGERPRINT  (1ull << 63)
#define SOCKET_SHIFT 40
#define SOCKET_MASK  ((1u << 23) - 1)
#define PRINT_MASK   ((1ull << SOCKET_SHIFT) - 1)

/* The kinds the CZMQ shim registers here: a socket's endpoints, its close (which ends them
 * all), and PIPE, a pipe made outside zactor_new, whose sends may precede the first use of the
 * receiving end. */
enum endpoint_kind { BIND, CONNECT, UNBIND, DISCONNECT, CLOSE, PIPE, ENDPOINT_KINDS };
static const char *const kind_names[ENDPOINT_KINDS] = {
    "zmq_bind", "zmq_connect", "zmq_unbind", "zmq_disconnect", "zmq_close", "zmq_pipe"};

/* Two sockets joined: the sends made in [from, until) go over the link. */
struct link {
    uint32_t peer;
    uint64_t from, until;
};

struct sock {
    uint32_t trace;
    uint64_t number;
    bool fanout;             /* PUB, XPUB: each joined socket receives every message */
    uint32_t first_endpoint; /* its first bind or connect; NONE */
    struct link *links;
    uint32_t nlinks;
    size_t links_cap;
};

struct endpoint {
    uint32_t sock;
    bool bound;
    const struct name *name;
    uint64_t ns, until; /* of its bind or connect, and of its unbind or disconnect (FOREVER) */
    uint64_t closed;    /* its socket's close, which ends its connections too (FOREVER) */
};

#define FOREVER UINT64_MAX

/* A send or recv on an ordinary socket. */
struct sock_msg {
    uint32_t trace, tid, sock;
    uint64_t tsc, ns, actor; /* actor: the sender of a send, the receiver of a recv */
    uint64_t print;          /* the fingerprint without the socket */
    uint32_t name;           /* its message name id, in its trace */
    bool send, failed;       /* failed: a send_failed follows, the message never left */
    uint32_t other;          /* send: its first receiver; recv: its send; NONE: no match */
    uint32_t deliveries;     /* send: its recvs in its first receiver's trace (fan-out: many) */
};

struct queue {
    uint32_t *sends; /* in time order */
    uint32_t n;
    size_t cap;
};

struct sockets {
    unsigned (*kinds)[ENDPOINT_KINDS]; /* per trace: the registered kind ids, 0 when absent */
    uint32_t *boot; /* per trace: the first trace of its boot (one clock); without one, 0's */
    struct sock *socks;
    uint32_t nsocks;
    size_t socks_cap;
    struct hmap sock_index; /* (trace, socket number) -> socks */
    struct endpoint *endpoints;
    uint32_t nendpoints;
    size_t endpoints_cap;
    struct sock_msg *msgs;
    uint32_t nmsgs;
    size_t msgs_cap;
    struct hmap msg_index; /* (trace << 32 | tid, tsc) -> msgs */
    struct queue *queues;
    uint32_t nqueues;
    size_t queues_cap;
    struct hmap queue_index; /* (sock, print) -> queues */
    struct hmap cursors;     /* (queue, receiving sock) -> the next send in the queue it may take */
    struct hmap receivers;   /* pipes: (trace, msg id) of a send without receiver -> receiver
                                index + 1 (0 until its recv), into `actors` */
    uint64_t *actors;
    uint32_t nactors;
    size_t actors_cap;
    struct at_event copy; /* the event at__sockets_apply rewrote last */
    uint64_t socket;      /* its socket number; 0: not a socket event */
    uint32_t sock;        /* its socks index; NONE */
    uint32_t remote;      /* its msgs index when the other end is in another trace */
    uint32_t msg;         /* its msgs index when it is a matched send or recv; NONE */
};

static bool name_is(const struct name *n, const char *s)
{
    return n && n->s && n->len == strlen(s) && memcmp(n->s, s, n->len) == 0;
}

/* Each trace's ids for the endpoint kinds; false when no trace registered one. */
static bool find_kinds(struct sockets *s, const struct decode *d)
{
    bool any = false;
    for (size_t i = 0; i < d->ntraces; i++)
        for (unsigned kind = AT_EV_FIRST_REGISTERED; kind < 256; kind++)
            for (int k = 0; k < ENDPOINT_KINDS; k++)
                if (name_is(&d->traces[i].names.kind[kind], kind_names[k])) {
                    s->kinds[i][k] = kind;
                    any = true;
                }
    return any;
}

static int endpoint_kind(const struct sockets *s, uint32_t trace, unsigned kind)
{
    for (int k = 0; k < ENDPOINT_KINDS; k++)
        if (s->kinds[trace][k] == kind)
            return k;
    return -1;
}

/* The index of socket `number` of a trace, added when new; NONE on -ENOMEM. */
static uint32_t sock_of(struct sockets *s, uint32_t trace, uint64_t number)
{
    struct hkey key = {trace, number};
    uint32_t *found = at__hmap_get(&s->sock_index, key);
    if (found)
        return *found;
    if (at__array_reserve((void **)&s->socks, &s->socks_cap, s->nsocks, sizeof *s->socks) < 0 ||
        at__hmap_put(&s->sock_index, key, s->nsocks) < 0)
        return NONE;
    s->socks[s->nsocks] = (struct sock){.trace = trace, .number = number, .first_endpoint = NONE};
    return s->nsocks++;
}

static bool same(const char *a, size_t a_len, const char *b, size_t b_len)
{
    return a_len == b_len && memcmp(a, b, a_len) == 0;
}

/* An unbind or disconnect ends the socket's latest bind or connect of that endpoint still
 * live (its string as recorded: for a bind, the endpoint libzmq reported). */
static void end_endpoint(struct sockets *s, uint32_t sock, bool bound, const struct name *n,
                         uint64_t ns)
{
    for (uint32_t i = s->nendpoints; n && i-- > 0;) {
        struct endpoint *p = &s->endpoints[i];
        if (p->sock == sock && p->bound == bound && p->until == FOREVER && p->name &&
            same(p->name->s, p->name->len, n->s, n->len)) {
            p->until = ns;
            return;
        }
    }
}

/* A close ends every bind and connect of the socket still live. */
static void close_sock(struct sockets *s, uint32_t sock, uint64_t ns)
{
    for (uint32_t i = 0; i < s->nendpoints; i++) {
        struct endpoint *p = &s->endpoints[i];
        if (p->sock == sock && p->until == FOREVER && p->closed == FOREVER)
            p->closed = ns;
    }
}

static int add_endpoint(struct sockets *s, const struct merged *e, uint32_t trace, int kind)
{
    const struct at_event *ev = e->ev;
    const struct names *nm = &e->trace->names;
    uint32_t sock = sock_of(s, trace, ev->peer);
    if (sock == NONE)
        return -ENOMEM;
    const struct name *type = &nm->path[ev->path], *name = at__names_get(nm, AT_NAME_MSG, ev->name);
    s->socks[sock].fanout = name_is(type, "PUB") || name_is(type, "XPUB");
    if (kind == CLOSE) {
        close_sock(s, sock, e->ts_ns);
        return 0;
    }
    if (kind != BIND && kind != CONNECT) {
        end_endpoint(s, sock, kind == UNBIND, name, e->ts_ns);
        return 0;
    }
    if (at__array_reserve((void **)&s->endpoints, &s->endpoints_cap, s->nendpoints,
                          sizeof *s->endpoints) < 0)
        return -ENOMEM;
    if (s->socks[sock].first_endpoint == NONE)
        s->socks[sock].first_endpoint = s->nendpoints;
    s->endpoints[s->nendpoints++] = (struct endpoint){.sock = sock,
                                                      .bound = kind == BIND,
                                                      .name = name,
                                                      .ns = e->ts_ns,
                                                      .until = FOREVER,
                                                      .closed = FOREVER};
    return 0;
}

static int add_msg(struct sockets *s, const struct merged *e, uint32_t trace)
{
    const struct at_event *ev = e->ev;
    uint32_t sock = sock_of(s, trace, ev->msg >> SOCKET_SHIFT & SOCKET_MASK);
    if (sock == NONE ||
        at__array_reserve((void **)&s->msgs, &s->msgs_cap, s->nmsgs, sizeof *s->msgs) < 0)
        return -ENOMEM;
    bool send = ev->kind == AT_EV_SEND;
    s->msgs[s->nmsgs] = (struct sock_msg){.trace = trace,
                                          .tid = e->thread->tid,
                                          .sock = sock,
                                          .tsc = ev->tsc,
                                          .ns = e->ts_ns,
                                          .actor = send ? ev->peer : ev->actor,
                                          .print = ev->msg & PRINT_MASK,
                                          .name = ev->name,
                                          .send = send,
                                          .other = NONE};
    struct hkey key = {(uint64_t)trace << 32 | e->thread->tid, ev->tsc};
    return at__hmap_put(&s->msg_index, key, s->nmsgs++);
}

static bool is_socket_msg(const struct at_event *ev)
{
    return (ev->kind == AT_EV_SEND || ev->kind == AT_EV_RECV) && (ev->msg & FINGERPRINT);
}

/* A send_failed (the only other kind with a fingerprint) follows its send on the same thread. */
static void mark_failed(struct sockets *s, uint32_t trace, uint32_t tid)
{
    for (uint32_t i = s->nmsgs; i-- > 0;) {
        struct sock_msg *m = &s->msgs[i];
        if (m->trace == trace && m->tid == tid) {
            m->failed = m->send;
            return;
        }
    }
}

/* A pipe message (an id, not a fingerprint) sent before the receiving end had an owner: its
 * recv, later, names the receiver. */
static int pipe_msg(struct sockets *s, const struct at_event *ev, uint32_t trace)
{
    struct hkey key = {trace, ev->msg};
    if (ev->kind == AT_EV_SEND)
        return ev->actor ? 0 : at__hmap_put(&s->receivers, key, 0);
    uint32_t *receiver = at__hmap_get(&s->receivers, key);
    if (!receiver || *receiver || ev->actor == 0)
        return 0;
    if (at__array_reserve((void **)&s->actors, &s->actors_cap, s->nactors, sizeof *s->actors) < 0)
        return -ENOMEM;
    s->actors[s->nactors++] = ev->actor;
    *receiver = s->nactors;
    return 0;
}

static int collect(struct sockets *s, const struct decode *d, const struct merged *e)
{
    uint32_t trace = (uint32_t)(e->trace - d->traces);
    if (is_socket_msg(e->ev))
        return add_msg(s, e, trace);
    if ((e->ev->kind == AT_EV_SEND || e->ev->kind == AT_EV_RECV) && e->ev->msg)
        return pipe_msg(s, e->ev, trace);
    if (e->ev->msg & FINGERPRINT) {
        mark_failed(s, trace, e->thread->tid);
        return 0;
    }
    int kind = e->ev->kind >= AT_EV_FIRST_REGISTERED ? endpoint_kind(s, trace, e->ev->kind) : -1;
    return kind < 0 || kind == PIPE ? 0 : add_endpoint(s, e, trace, kind);
}

/* Reads every event once, without counting them as decoded or reporting damage twice. */
static int read_all(struct sockets *s, struct decode *d)
{
    struct merge m;
    struct merged e;
    struct {
        uint64_t decoded, damaged;
        FILE *diag;
    } saved[d->ntraces];
    for (size_t i = 0; i < d->ntraces; i++) {
        saved[i].decoded = d->traces[i].events_decoded;
        saved[i].damaged = d->traces[i].damaged;
        saved[i].diag = d->traces[i].diag;
        d->traces[i].diag = NULL;
    }
    int err = at__merge_init(&m, d->traces, d->ntraces, &d->unpacker);
    while (err == 0 && (err = at__merge_next(&m, &e)) > 0)
        err = collect(s, d, &e);
    at__merge_free(&m);
    for (size_t i = 0; i < d->ntraces; i++) {
        d->traces[i].events_decoded = saved[i].decoded;
        d->traces[i].damaged = saved[i].damaged;
        d->traces[i].diag = saved[i].diag;
    }
    return err;
}

/* ---- Joining endpoints ------------------------------------------------------------------ */

/* An endpoint's parts: "tcp://host:port" -> scheme "tcp", address "host:port". */
struct address {
    const char *scheme, *rest, *port;
    size_t scheme_len, rest_len, host_len, port_len;
};

static bool parse(const struct name *n, struct address *a)
{
    const char *sep = n && n->s ? memmem(n->s, n->len, "://", 3) : NULL;
    if (!sep)
        return false;
    a->scheme = n->s;
    a->scheme_len = (size_t)(sep - n->s);
    a->rest = sep + 3;
    a->rest_len = n->len - a->scheme_len - 3;
    const char *colon = memrchr(a->rest, ':', a->rest_len);
    a->host_len = colon ? (size_t)(colon - a->rest) : a->rest_len;
    a->port = colon ? colon + 1 : a->rest + a->rest_len;
    a->port_len = a->rest_len - (size_t)(a->port - a->rest);
    return true;
}

static bool wildcard(const struct address *a)
{
    return same(a->rest, a->host_len, "*", 1) || same(a->rest, a->host_len, "0.0.0.0", 7) ||
           same(a->rest, a->host_len, "[::]", 4);
}

/* How well a bind answers a connect: 0 not at all; for tcp, 3 the same host, 2 a wildcard
 * address, 1 only the same port (the connect named the host another way). */
static int fit(const struct sockets *s, const struct endpoint *c, const struct endpoint *b)
{
    struct address ca, ba;
    if (!parse(c->name, &ca) || !parse(b->name, &ba) ||
        !same(ca.scheme, ca.scheme_len, ba.scheme, ba.scheme_len))
        return 0;
    bool same_trace = s->socks[c->sock].trace == s->socks[b->sock].trace;
    if (same(ca.scheme, ca.scheme_len, "inproc", 6))
        return same_trace && same(ca.rest, ca.rest_len, ba.rest, ba.rest_len) ? 3 : 0;
    if (!same(ca.scheme, ca.scheme_len, "tcp", 3))
        return same(ca.rest, ca.rest_len, ba.rest, ba.rest_len) ? 3 : 0;
    if (!same(ca.port, ca.port_len, ba.port, ba.port_len))
        return 0;
    if (same(ca.rest, ca.host_len, ba.rest, ba.host_len))
        return 3;
    return wildcard(&ba) ? 2 : 1;
}

/* Whether endpoint e's close ends it for the other end: when the two traces share a clock (one
 * boot). Across hosts the close, often the last event of a run, would be placed by a clock
 * offset not yet corrected, and cut joins that lasted: there only unbind and disconnect end
 * them. */
static bool close_seen(const struct sockets *s, const struct endpoint *e,
                       const struct endpoint *other)
{
    return e->closed != FOREVER &&
           s->boot[s->socks[e->sock].trace] == s->boot[s->socks[other->sock].trace];
}

/* When endpoint e ends, for the other end: its unbind or disconnect, or its close if seen. */
static uint64_t end_of(const struct sockets *s, const struct endpoint *e,
                       const struct endpoint *other)
{
    return close_seen(s, e, other) && e->closed < e->until ? e->closed : e->until;
}

/* The bound endpoint a connect reaches among endpoints[first..], bound from `after` on and live
 * while it was: the best fit first, the earliest of equals; NONE. */
static uint32_t bind_for(const struct sockets *s, const struct endpoint *c, uint32_t first,
                         uint64_t after)
{
    uint32_t best = NONE;
    int best_fit = 0;
    for (uint32_t i = first; i < s->nendpoints; i++) {
        const struct endpoint *b = &s->endpoints[i];
        bool live = b->ns >= after && b->ns < end_of(s, c, b) && c->ns < end_of(s, b, c);
        int f = b->bound && live ? fit(s, c, b) : 0;
        if (f > best_fit) {
            best = i;
            best_fit = f;
        }
    }
    return best;
}

static int add_link(struct sock *sock, struct link link)
{
    if (at__array_reserve((void **)&sock->links, &sock->links_cap, sock->nlinks,
                          sizeof *sock->links) < 0)
        return -ENOMEM;
    sock->links[sock->nlinks++] = link;
    return 0;
}

/* The link of a connect to one bind: from the connect (libzmq queues what is sent before the
 * bind, and reconnects by itself to a later bind, from its time), to the disconnect, or the
 * unbind, which closes the connections the bind accepted (not over inproc, whose pipes outlive
 * the name), or the close of either socket. */
static bool is_inproc(const struct name *n)
{
    struct address a;
    return parse(n, &a) && same(a.scheme, a.scheme_len, "inproc", 6);
}

static int link_pair(struct sockets *s, const struct endpoint *c, const struct endpoint *b,
                     bool first)
{
    uint64_t c_end = end_of(s, c, b), b_end = end_of(s, b, c);
    bool pipes_live = is_inproc(c->name) && !close_seen(s, b, c);
    uint64_t until = pipes_live || c_end < b_end ? c_end : b_end;
    struct link link = {.peer = b->sock, .from = first ? c->ns : b->ns, .until = until};
    if (add_link(&s->socks[c->sock], link) < 0)
        return -ENOMEM;
    link.peer = c->sock;
    return add_link(&s->socks[b->sock], link);
}

/* Joins a connect to the bind it reaches, then to each bound later (endpoints are in time
 * order), after the previous one's unbind or close, while the connect lasts (a server that
 * rebinds its endpoint). Not over inproc after a close: that connection is gone, and libzmq
 * reconnects only tcp and ipc. */
static int join_connect(struct sockets *s, const struct endpoint *c)
{
    uint64_t after = 0;
    for (uint32_t first = 0, b; after != FOREVER && (b = bind_for(s, c, first, after)) != NONE;
         first = b + 1) {
        if (link_pair(s, c, &s->endpoints[b], first == 0) < 0)
            return -ENOMEM;
        if (close_seen(s, &s->endpoints[b], c) && is_inproc(c->name))
            break;
        after = end_of(s, &s->endpoints[b], c);
    }
    return 0;
}

static int join(struct sockets *s)
{
    int err = 0;
    for (uint32_t i = 0; err == 0 && i < s->nendpoints; i++)
        err = s->endpoints[i].bound ? 0 : join_connect(s, &s->endpoints[i]);
    return err;
}

/* Whether a send made at ns on socket `from` could reach socket `to`: before the link ended;
 * and, from a fan-out socket, after it began (a PUB drops what no one is linked to receive,
 * where other sockets' sends wait for a peer, and are recorded before they wait). */
static bool linked(const struct sockets *s, uint32_t from, uint32_t to, uint64_t ns)
{
    const struct sock *sock = &s->socks[to];
    bool fanout = s->socks[from].fanout;
    for (uint32_t i = 0; i < sock->nlinks; i++) {
        const struct link *l = &sock->links[i];
        if (l->peer == from && ns < l->until && (!fanout || l->from <= ns))
            return true;
    }
    return false;
}

/* ---- Matching ----------------------------------------------------------------------------- */

static int enqueue(struct sockets *s, uint32_t index)
{
    const struct sock_msg *m = &s->msgs[index];
    struct hkey key = {m->sock, m->print};
    uint32_t *found = at__hmap_get(&s->queue_index, key);
    uint32_t q = found ? *found : s->nqueues;
    if (!found) {
        if (at__array_reserve((void **)&s->queues, &s->queues_cap, s->nqueues, sizeof *s->queues) <
                0 ||
            at__hmap_put(&s->queue_index, key, q) < 0)
            return -ENOMEM;
        s->queues[s->nqueues++] = (struct queue){0};
    }
    struct queue *queue = &s->queues[q];
    if (at__array_reserve((void **)&queue->sends, &queue->cap, queue->n, sizeof *queue->sends) < 0)
        return -ENOMEM;
    queue->sends[queue->n++] = index;
    return 0;
}

/* Where in queue q a recv on socket `to` looks for its next send (added at 0). NULL on
 * -ENOMEM; valid until the next call. */
static uint32_t *cursor(struct sockets *s, uint32_t q, uint32_t to)
{
    struct hkey key = {q, to};
    if (!at__hmap_get(&s->cursors, key) && at__hmap_put(&s->cursors, key, 0) < 0)
        return NULL;
    return at__hmap_get(&s->cursors, key);
}

/* The send a recv on socket `to` would take from the queue of (from, print): the oldest sent
 * while the two were linked and not taken yet (unless `from` fans out). The cursor passes for
 * good the sends `to` can never take. NONE when it has none left, *err set on -ENOMEM. */
static uint32_t next_send(struct sockets *s, uint32_t from, uint32_t to, uint64_t print, int *err)
{
    uint32_t *q = at__hmap_get(&s->queue_index, (struct hkey){from, print});
    if (!q)
        return NONE;
    const struct queue *queue = &s->queues[*q];
    uint32_t *at = cursor(s, *q, to);
    if (!at)
        *err = -ENOMEM;
    for (; at && *at < queue->n; ++*at) {
        const struct sock_msg *m = &s->msgs[queue->sends[*at]];
        if ((s->socks[from].fanout || m->other == NONE) && linked(s, from, to, m->ns))
            return queue->sends[*at];
    }
    return NONE;
}

/* The oldest send not yet taken, with the recv's fingerprint, on a socket joined to its own. */
static int take(struct sockets *s, uint32_t recv)
{
    struct sock_msg *r = &s->msgs[recv];
    const struct sock *to = &s->socks[r->sock];
    uint32_t best_peer = NONE, best_send = NONE;
    int err = 0;
    for (uint32_t i = 0; err == 0 && i < to->nlinks; i++) {
        uint32_t send = next_send(s, to->links[i].peer, r->sock, r->print, &err);
        if (send != NONE && (best_send == NONE || s->msgs[send].ns < s->msgs[best_send].ns)) {
            best_peer = to->links[i].peer;
            best_send = send;
        }
    }
    if (err < 0 || best_send == NONE)
        return err;
    uint32_t queue = *at__hmap_get(&s->queue_index, (struct hkey){best_peer, r->print});
    (*cursor(s, queue, r->sock))++;
    r->other = best_send;
    struct sock_msg *send = &s->msgs[best_send];
    if (send->other == NONE)
        send->other = recv;
    send->deliveries += s->msgs[send->other].trace == r->trace;
    return 0;
}

static int match(struct sockets *s)
{
    int err = 0;
    for (uint32_t i = 0; err == 0 && i < s->nmsgs; i++)
        err = s->msgs[i].send && !s->msgs[i].failed ? enqueue(s, i) : 0;
    for (uint32_t i = 0; err == 0 && i < s->nmsgs; i++)
        err = s->msgs[i].send ? 0 : take(s, i);
    return err;
}

/* The first trace of trace i's boot, as clocks.c groups them: a trace without a boot id goes
 * with the first. */
static uint32_t boot_group(const struct decode *d, size_t i)
{
    const char *boot = d->traces[i].process.boot_id;
    for (size_t j = 0; boot && *boot && j < i; j++)
        if (d->traces[j].process.boot_id && strcmp(d->traces[j].process.boot_id, boot) == 0)
            return (uint32_t)j;
    return boot && *boot ? (uint32_t)i : 0;
}

int at__sockets_prepare(struct decode *d)
{
    size_t n = d->ntraces ? d->ntraces : 1;
    struct sockets *s = calloc(1, sizeof *s);
    if (s) {
        s->kinds = calloc(n, sizeof *s->kinds);
        s->boot = calloc(n, sizeof *s->boot);
    }
    if (!s || !s->kinds || !s->boot) {
        if (s) {
            free(s->kinds);
            free(s->boot);
        }
        free(s);
        return -ENOMEM;
    }
    d->sockets = s;
    for (size_t i = 0; i < d->ntraces; i++)
        s->boot[i] = boot_group(d, i);
    if (!find_kinds(s, d)) {
        at__sockets_free(d);
        return 0;
    }
    int err = read_all(s, d);
    if (err == 0)
        err = join(s);
    return err == 0 ? match(s) : err;
}

/* ---- Output ------------------------------------------------------------------------------- */

/* The message id both ends of a matched pair carry: its send's index + 1, below 2^32 (pipe ids
 * are above). */
static uint64_t pair_id(const struct sockets *s, uint32_t index)
{
    const struct sock_msg *m = &s->msgs[index];
    return m->send ? index + 1 : (uint64_t)m->other + 1;
}

static void rewrite(struct sockets *s, const struct merged *e, uint32_t trace)
{
    uint32_t *found = at__hmap_get(
        &s->msg_index, (struct hkey){(uint64_t)trace << 32 | e->thread->tid, e->ev->tsc});
    s->copy.msg = 0;
    if (!found || s->msgs[*found].other == NONE)
        return;
    const struct sock_msg *m = &s->msgs[*found], *other = &s->msgs[m->other];
    s->copy.msg = pair_id(s, *found);
    s->msg = *found;
    if (other->trace != trace)
        s->remote = *found;
    else if (m->send)
        s->copy.actor = other->actor;
    else
        s->copy.peer = other->actor;
}

/* A pipe send without receiver takes its recv's actor. */
static void name_receiver(struct sockets *s, struct merged *e, uint32_t trace)
{
    uint32_t *receiver = at__hmap_get(&s->receivers, (struct hkey){trace, e->ev->msg});
    if (!receiver || !*receiver)
        return;
    s->copy = *e->ev;
    s->copy.actor = s->actors[*receiver - 1];
    e->ev = &s->copy;
}

void at__sockets_apply(struct decode *d, struct merged *e)
{
    struct sockets *s = d->sockets;
    if (!s)
        return;
    s->socket = 0;
    s->sock = NONE;
    s->remote = NONE;
    s->msg = NONE;
    uint32_t trace = (uint32_t)(e->trace - d->traces);
    if (e->ev->kind == AT_EV_SEND && e->ev->actor == 0 && e->ev->msg &&
        !(e->ev->msg & FINGERPRINT)) {
        name_receiver(s, e, trace);
        return;
    }
    int kind = e->ev->kind >= AT_EV_FIRST_REGISTERED ? endpoint_kind(s, trace, e->ev->kind) : -1;
    bool endpoint = kind >= 0 && kind != PIPE;
    if (!endpoint && !(e->ev->msg & FINGERPRINT))
        return;
    s->copy = *e->ev;
    if (endpoint) {
        s->socket = e->ev->peer;
        s->copy.peer = 0;
    } else if (!is_socket_msg(e->ev)) {
        s->socket = e->ev->msg >> SOCKET_SHIFT & SOCKET_MASK; /* send_failed */
        s->copy.msg = 0;
    } else {
        s->socket = e->ev->msg >> SOCKET_SHIFT & SOCKET_MASK;
        rewrite(s, e, trace);
    }
    uint32_t *sock = at__hmap_get(&s->sock_index, (struct hkey){trace, s->socket});
    s->sock = sock ? *sock : NONE;
    e->ev = &s->copy;
}

bool at__sockets_remote(const struct decode *d, struct sockets_remote *out)
{
    const struct sockets *s = d->sockets;
    if (!s || s->remote == NONE)
        return false;
    const struct sock_msg *other = &s->msgs[s->msgs[s->remote].other];
    *out =
        (struct sockets_remote){.trace = other->trace, .actor = other->actor, .name = other->name};
    return true;
}

bool at__sockets_later_delivery(const struct decode *d, struct sockets_remote *send)
{
    const struct sockets *s = d->sockets;
    if (!s || s->msg == NONE || s->msgs[s->msg].send)
        return false;
    const struct sock_msg *m = &s->msgs[s->msgs[s->msg].other];
    if (m->other == s->msg)
        return false;
    *send = (struct sockets_remote){.trace = m->trace, .actor = m->actor, .name = m->name};
    return true;
}

uint32_t at__sockets_deliveries(const struct decode *d)
{
    const struct sockets *s = d->sockets;
    if (!s || s->msg == NONE || !s->msgs[s->msg].send)
        return 1;
    return s->msgs[s->msg].deliveries > 1 ? s->msgs[s->msg].deliveries : 1;
}

const struct name *at__sockets_endpoint(const struct decode *d)
{
    const struct sockets *s = d->sockets;
    if (!s || s->sock == NONE || s->socks[s->sock].first_endpoint == NONE)
        return NULL;
    return s->endpoints[s->socks[s->sock].first_endpoint].name;
}

char *at__sockets_json(char *p, const struct decode *d)
{
    const struct sockets *s = d->sockets;
    if (!s || !s->socket)
        return p;
    p = at__fmt_u64(AT_PUT(p, ",\"socket\":"), s->socket);
    if (s->remote == NONE)
        return p;
    const struct sock_msg *m = &s->msgs[s->remote], *other = &s->msgs[m->other];
    p = at__fmt_u64(m->send ? AT_PUT(p, ",\"actor\":") : AT_PUT(p, ",\"sender\":"), other->actor);
    p = m->send ? AT_PUT(p, ",\"actor_pid\":") : AT_PUT(p, ",\"sender_pid\":");
    p = at__fmt_u64(p, d->traces[other->trace].process.pid);
    const struct name *name = at__sockets_remote_name(d);
    if (!name)
        return p;
    p = m->send ? AT_PUT(p, ",\"actor_name\":") : AT_PUT(p, ",\"sender_name\":");
    return at__fmt_json_str(p, name->s, name->len);
}

const struct name *at__sockets_remote_name(const struct decode *d)
{
    const struct sockets *s = d->sockets;
    if (!s || s->remote == NONE)
        return NULL;
    const struct sock_msg *other = &s->msgs[s->msgs[s->remote].other];
    const struct name *n =
        other->actor ? at__names_get(&d->traces[other->trace].names, AT_NAME_ACTOR, other->actor)
                     : NULL;
    return n && n->s ? n : NULL;
}

void at__sockets_each_remote(const struct decode *d,
                             void (*each)(void *arg, const struct remote_pair *pair), void *arg)
{
    const struct sockets *s = d->sockets;
    for (uint32_t i = 0; s && i < s->nmsgs; i++) {
        const struct sock_msg *r = &s->msgs[i],
                              *send = r->send || r->other == NONE ? NULL : &s->msgs[r->other];
        if (send && send->trace != r->trace)
            each(arg, &(struct remote_pair){send->trace, r->trace, send->ns, r->ns});
    }
}

void at__sockets_free(struct decode *d)
{
    struct sockets *s = d->sockets;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nsocks; i++)
        free(s->socks[i].links);
    for (uint32_t i = 0; i < s->nqueues; i++)
        free(s->queues[i].sends);
    free(s->kinds);
    free(s->boot);
    free(s->socks);
    free(s->endpoints);
    free(s->msgs);
    free(s->queues);
    at__hmap_free(&s->sock_index);
    at__hmap_free(&s->msg_index);
    at__hmap_free(&s->queue_index);
    at__hmap_free(&s->cursors);
    at__hmap_free(&s->receivers);
    free(s->actors);
    free(s);
    d->sockets = NULL;
}
