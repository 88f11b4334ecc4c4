/* --format dot: the actor graph for Graphviz. A node per actor that sent or was sent a message
 * ("outside any actor" stands for sends with no sender), an edge per (sender, receiver) pair
 * labelled with its sends by message name, most frequent first; its width grows with the
 * count. Each trace file is a cluster, since actor ids are per process. A ZeroMQ socket message
 * received in another file goes to its receiver in that file's cluster; a send whose receiver
 * stays unknown goes to a "receiver unknown" node for its socket's endpoint (sockets.c), or,
 * off sockets, to the cluster's one without an endpoint. Only send events count: the graph is who
 * talked to whom, whatever became of the messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "at_format.h"
#include "session.h"
#include "hmap.h"
#include "order.h"
#include "output.h"
#include "sockets.h"

#define MAX_LABEL_NAMES 8 /* per edge; the rest is summed as "other" */
#define LINE_FIXED      256
#define NODE_CACHE      64 /* recently seen actors' nodes, looked up before the hash map */

/* What a node stands for: an actor of a trace (0: outside any actor), a receiver unknown but
 * for its endpoint, or a receiver unknown altogether. */
enum node_kind { ACTOR, ENDPOINT, UNKNOWN };

struct node {
    uint32_t trace;
    enum node_kind kind;
    uint64_t id;                 /* ACTOR: the actor; ENDPOINT: its hash's slot */
    const struct name *endpoint; /* ENDPOINT */
    uint32_t before;             /* the index the node had before sorting */
};

struct edge {
    uint32_t id;               /* the index the edge had before sorting */
    uint32_t sender, receiver; /* nodes */
    uint64_t count;
};

struct edge_name {
    uint32_t edge, name;
    uint64_t count;
};

struct dot {
    struct {
        uint64_t actor;
        uint32_t trace, index; /* index + 1; 0: empty */
    } cache[NODE_CACHE];
    struct hmap node_index; /* (trace << 2 | kind, id) -> index into nodes */
    struct node *nodes;
    size_t nnodes, nodes_cap;
    struct hmap edge_index; /* (sender, receiver) -> index into edges */
    struct edge *edges;
    size_t nedges, edges_cap;
    struct hmap name_index; /* (edge, name) -> index into names */
    struct edge_name *names;
    size_t nnames, names_cap;
};

/* The index of a node, added when new. */
static int node_of(struct dot *g, struct node n, uint32_t *index)
{
    struct hkey key = {(uint64_t)n.trace << 2 | n.kind, n.id};
    uint32_t *found = at__hmap_get(&g->node_index, key);
    if (found) {
        *index = *found;
        return 0;
    }
    if (at__array_reserve((void **)&g->nodes, &g->nodes_cap, g->nnodes, sizeof *g->nodes) < 0 ||
        at__hmap_put(&g->node_index, key, (uint32_t)g->nnodes) < 0)
        return -ENOMEM;
    g->nodes[g->nnodes] = n;
    g->nodes[g->nnodes].before = (uint32_t)g->nnodes;
    *index = (uint32_t)g->nnodes++;
    return 0;
}

/* Every send looks up two actors' nodes, and a run has few busy actors: a small direct-mapped
 * cache in front of the hash map answers most lookups. */
static int actor_node(struct dot *g, uint32_t trace, uint64_t actor, uint32_t *index)
{
    size_t slot = (size_t)((actor ^ trace) * 0x9E3779B97F4A7C15ull >> 58);
    if (g->cache[slot].index && g->cache[slot].actor == actor && g->cache[slot].trace == trace) {
        *index = g->cache[slot].index - 1;
        return 0;
    }
    int err = node_of(g, (struct node){trace, ACTOR, actor, NULL, 0}, index);
    if (err == 0) {
        g->cache[slot].actor = actor;
        g->cache[slot].trace = trace;
        g->cache[slot].index = *index + 1;
    }
    return err;
}

static uint64_t hash_name(const struct name *n)
{
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
    for (uint32_t i = 0; i < n->len; i++)
        h = (h ^ (uint8_t)n->s[i]) * 0x100000001B3ull;
    return h;
}

/* The node of an endpoint of a trace: one per endpoint string, found by its hash, the next
 * slot on a collision. */
static int endpoint_node(struct dot *g, uint32_t trace, const struct name *n, uint32_t *index)
{
    for (uint64_t slot = hash_name(n);; slot++) {
        struct hkey key = {(uint64_t)trace << 2 | ENDPOINT, slot};
        uint32_t *found = at__hmap_get(&g->node_index, key);
        const struct name *e = found ? g->nodes[*found].endpoint : NULL;
        if (!found)
            return node_of(g, (struct node){trace, ENDPOINT, slot, n, 0}, index);
        if (e->len == n->len && memcmp(e->s, n->s, n->len) == 0) {
            *index = *found;
            return 0;
        }
    }
}

/* The node a send goes to: its receiver, in its own trace or, for a socket message received
 * in another file, there; else its socket's endpoint; else the trace's unknown receiver. */
static int receiver_node(struct dot *g, const struct decode *d, uint32_t trace,
                         const struct at_event *ev, uint32_t *index)
{
    struct sockets_remote other;
    const struct name *endpoint;
    if (ev->actor)
        return actor_node(g, trace, ev->actor, index);
    if (at__sockets_remote(d, &other) && other.actor)
        return actor_node(g, other.trace, other.actor, index);
    if ((endpoint = at__sockets_endpoint(d)) && endpoint->s)
        return endpoint_node(g, trace, endpoint, index);
    return node_of(g, (struct node){trace, UNKNOWN, 0, NULL, 0}, index);
}

/* The index of the edge sender -> receiver (nodes), added when new. */
static int edge_of(struct dot *g, uint32_t sender, uint32_t receiver, uint32_t *index)
{
    struct hkey key = {sender, receiver};
    uint32_t *found = at__hmap_get(&g->edge_index, key);
    if (found) {
        *index = *found;
        return 0;
    }
    if (at__array_reserve((void **)&g->edges, &g->edges_cap, g->nedges, sizeof *g->edges) < 0 ||
        at__hmap_put(&g->edge_index, key, (uint32_t)g->nedges) < 0)
        return -ENOMEM;
    g->edges[g->nedges] = (struct edge){(uint32_t)g->nedges, sender, receiver, 0};
    *index = (uint32_t)g->nedges++;
    return 0;
}

static int count_name(struct dot *g, uint32_t edge, uint32_t name)
{
    struct hkey key = {edge, name};
    uint32_t *found = at__hmap_get(&g->name_index, key);
    if (found) {
        g->names[*found].count++;
        return 0;
    }
    if (at__array_reserve((void **)&g->names, &g->names_cap, g->nnames, sizeof *g->names) < 0 ||
        at__hmap_put(&g->name_index, key, (uint32_t)g->nnames) < 0)
        return -ENOMEM;
    g->names[g->nnames++] = (struct edge_name){edge, name, 1};
    return 0;
}

/* A fan-out send's delivery other than its first (its send counted the first): an edge from
 * its sender to the recv's actor. */
static int later_delivery(struct dot *g, const struct decode *d, uint32_t trace,
                          const struct at_event *ev)
{
    struct sockets_remote send;
    uint32_t sender, receiver, edge;
    if (!at__sockets_later_delivery(d, &send))
        return 0;
    int err = actor_node(g, send.trace, send.actor, &sender);
    if (err == 0)
        err = actor_node(g, trace, ev->actor, &receiver);
    if (err == 0)
        err = edge_of(g, sender, receiver, &edge);
    if (err == 0) {
        g->edges[edge].count++;
        err = count_name(g, edge, send.name);
    }
    return err;
}

static int dot_event(struct out *o, const struct decode *d, const struct merged *e)
{
    (void)o;
    struct dot *g = d->state;
    const struct at_event *ev = e->ev;
    uint32_t trace = (uint32_t)(e->trace - d->traces), sender, receiver, edge;
    if (ev->kind == AT_EV_RECV)
        return later_delivery(g, d, trace, ev);
    if (ev->kind != AT_EV_SEND)
        return 0;
    int err = actor_node(g, trace, ev->peer, &sender);
    if (err == 0)
        err = receiver_node(g, d, trace, ev, &receiver);
    if (err == 0)
        err = edge_of(g, sender, receiver, &edge);
    if (err == 0) {
        g->edges[edge].count++;
        err = count_name(g, edge, ev->name);
    }
    return err;
}

/* ---- Writing the graph ------------------------------------------------------------------- */

static int by_node(const void *a, const void *b)
{
    const struct node *x = a, *y = b;
    int c = at__order(x->trace, y->trace);
    if (!c)
        c = at__order(x->kind, y->kind);
    return c ? c : at__order(x->id, y->id);
}

/* By sender, then receiver: nodes sorted by trace first, so by the sender's trace. */
static int by_edge(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    int c = at__order(x->sender, y->sender);
    return c ? c : at__order(x->receiver, y->receiver);
}

/* Names grouped by edge, the most frequent first. */
static int by_count(const void *a, const void *b)
{
    const struct edge_name *x = a, *y = b;
    int c = at__order(x->edge, y->edge);
    if (!c)
        c = at__order(y->count, x->count);
    return c ? c : at__order(x->name, y->name);
}

/* Sorts nodes by (trace, kind, id), edges by (sender, receiver) in that order, and names by
 * edge, then count: the output is the same whatever order the sends came in. */
static int sort_graph(struct dot *g)
{
    size_t most = g->nedges > g->nnodes ? g->nedges : g->nnodes;
    uint32_t *position = malloc((most ? most : 1) * sizeof *position);
    if (!position)
        return -ENOMEM;
    if (g->nnodes > 1)
        qsort(g->nodes, g->nnodes, sizeof *g->nodes, by_node);
    for (size_t i = 0; i < g->nnodes; i++)
        position[g->nodes[i].before] = (uint32_t)i;
    for (size_t i = 0; i < g->nedges; i++) {
        g->edges[i].sender = position[g->edges[i].sender];
        g->edges[i].receiver = position[g->edges[i].receiver];
    }
    if (g->nedges > 1)
        qsort(g->edges, g->nedges, sizeof *g->edges, by_edge);
    for (size_t i = 0; i < g->nedges; i++)
        position[g->edges[i].id] = (uint32_t)i;
    for (size_t i = 0; i < g->nnames; i++)
        g->names[i].edge = position[g->names[i].edge];
    if (g->nnames > 1)
        qsort(g->names, g->nnames, sizeof *g->names, by_count);
    free(position);
    return 0;
}

/* A node id unique over every trace, quoted: "T:ID" for an actor, "T:endpoint:N" for an
 * endpoint (N its place among the sorted nodes), "T:unknown". */
static char *put_node_id(char *p, const struct dot *g, uint32_t node)
{
    const struct node *n = &g->nodes[node];
    *p++ = '"';
    p = at__fmt_u64(p, n->trace);
    if (n->kind == ACTOR)
        p = at__fmt_u64(AT_PUT(p, ":"), n->id);
    else if (n->kind == ENDPOINT)
        p = at__fmt_u64(AT_PUT(p, ":endpoint:"), node);
    else
        p = AT_PUT(p, ":unknown");
    *p++ = '"';
    return p;
}

/* Text inside a DOT string, which is open: quotes and backslashes escaped, bad UTF-8 as
 * U+FFFD, and control bytes as '?' (DOT has no escape for them, and draws "\t" as "t"). At
 * most 3 bytes a byte. */
static char *put_text(char *p, const char *s, size_t len)
{
    for (size_t i = 0, run; i < len; i = run + 1) {
        for (run = i; run < len; run++) {
            unsigned char c = (unsigned char)s[run];
            if (c < 0x20 || c == '"' || c == '\\')
                break;
        }
        p = at__fmt_utf8(p, s + i, run - i);
        if (run < len && (s[run] == '"' || s[run] == '\\'))
            p = at__put(p, s[run] == '"' ? "\\\"" : "\\\\", 2);
        else if (run < len)
            *p++ = '?';
    }
    return p;
}

/* The label of an actor's node: its name and id, or the node outside any actor. */
static char *put_actor_label(char *p, const struct trace *t, uint64_t actor)
{
    const struct name *n = actor ? at__names_get(&t->names, AT_NAME_ACTOR, actor) : NULL;
    if (actor == 0)
        return AT_PUT(p, "\"outside any actor\", style=dashed");
    if (!n) {
        p = at__put(AT_PUT(p, "\""), at__actor_prefix(actor), strlen(at__actor_prefix(actor)));
        return AT_PUT(at__fmt_u64(p, at__actor_number(actor)), "\"");
    }
    p = put_text(AT_PUT(p, "\""), n->s, n->len);
    return AT_PUT(at__fmt_u64(AT_PUT(p, "\\n(actor "), actor), ")\"");
}

static int put_node(struct out *o, const struct decode *d, const struct dot *g, uint32_t node)
{
    const struct node *n = &g->nodes[node];
    const struct trace *t = &d->traces[n->trace];
    const struct name *actor =
        n->kind == ACTOR && n->id ? at__names_get(&t->names, AT_NAME_ACTOR, n->id) : NULL;
    size_t len = actor ? actor->len : n->endpoint ? n->endpoint->len : 0;
    char *p = at__out_reserve(o, LINE_FIXED + at__json_str_bound(len));
    if (!p)
        return -ENOMEM;
    p = AT_PUT(put_node_id(AT_PUT(p, "    "), g, node), " [label=");
    if (n->kind == ACTOR)
        p = put_actor_label(p, t, n->id);
    else if (n->kind == ENDPOINT)
        p = AT_PUT(put_text(AT_PUT(p, "\"receiver unknown\\n"), n->endpoint->s, n->endpoint->len),
                   "\", shape=ellipse, style=dashed");
    else
        p = AT_PUT(p, "\"receiver unknown\", shape=ellipse, style=dashed");
    at__out_commit(o, AT_PUT(p, "];\n"));
    return 0;
}

/* The cluster of one trace, nodes[first..end): its nodes; edges go outside the clusters. */
static int put_cluster(struct out *o, const struct decode *d, const struct dot *g, size_t first,
                       size_t end)
{
    uint32_t trace = g->nodes[first].trace;
    const struct trace *t = &d->traces[trace];
    const char *exe = t->process.exe ? t->process.exe : "";
    char *p = at__out_reserve(o, LINE_FIXED + at__json_str_bound(strlen(exe)));
    if (!p)
        return -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "  subgraph cluster_"), trace);
    p = put_text(AT_PUT(p, " {\n    label=\""), exe, strlen(exe));
    at__out_commit(o, AT_PUT(at__fmt_u64(AT_PUT(p, " (pid "), t->process.pid), ")\";\n"));
    int err = 0;
    for (size_t i = first; err == 0 && i < end; i++)
        err = put_node(o, d, g, (uint32_t)i);
    if (err == 0 && !(p = at__out_reserve(o, LINE_FIXED)))
        err = -ENOMEM;
    if (err == 0)
        at__out_commit(o, AT_PUT(p, "  }\n"));
    return err;
}

/* One label line, "NAME COUNT\n". */
static char *put_label_line(char *p, const struct trace *t, uint32_t name, uint64_t count)
{
    const struct name *n = name ? at__names_get(&t->names, AT_NAME_MSG, name) : NULL;
    if (n)
        p = put_text(p, n->s, n->len);
    else if (name)
        p = at__fmt_u64(AT_PUT(p, "name_"), at__names_msg_number(&t->names, name));
    else
        p = AT_PUT(p, AT_UNNAMED);
    return AT_PUT(at__fmt_u64(AT_PUT(p, " "), count), "\\n");
}

static size_t digits(uint64_t v)
{
    size_t n = 1;
    for (; v >= 10; v /= 10)
        n++;
    return n;
}

/* The room the label of names[first..end) needs. */
static size_t label_bound(const struct trace *t, const struct dot *g, size_t first, size_t end)
{
    size_t room = LINE_FIXED;
    for (size_t i = first; i < end && i - first < MAX_LABEL_NAMES; i++) {
        const struct name *n = at__names_get(&t->names, AT_NAME_MSG, g->names[i].name);
        room += 64 + (n ? at__json_str_bound(n->len) : 0);
    }
    return room;
}

/* An edge and its label, from names[*next..], which it advances past the edge's names. Message
 * names are the sender's trace's. */
static int put_edge(struct out *o, const struct decode *d, const struct dot *g, uint32_t edge,
                    size_t *next)
{
    const struct edge *e = &g->edges[edge];
    const struct trace *t = &d->traces[g->nodes[e->sender].trace];
    size_t first = *next, end = first;
    while (end < g->nnames && g->names[end].edge == edge)
        end++;
    *next = end;
    char *p = at__out_reserve(o, label_bound(t, g, first, end));
    if (!p)
        return -ENOMEM;
    p = put_node_id(AT_PUT(put_node_id(AT_PUT(p, "  "), g, e->sender), " -> "), g, e->receiver);
    p = at__fmt_u64(AT_PUT(p, " [penwidth="), 1 + digits(e->count) / 2);
    p = AT_PUT(p, ", label=\"");
    uint64_t other = 0;
    for (size_t i = first; i < end; i++) {
        if (i - first < MAX_LABEL_NAMES)
            p = put_label_line(p, t, g->names[i].name, g->names[i].count);
        else
            other += g->names[i].count;
    }
    if (other)
        p = AT_PUT(at__fmt_u64(AT_PUT(p, "other "), other), "\\n");
    at__out_commit(o, AT_PUT(p, "\"];\n"));
    return 0;
}

static int dot_end(struct out *o, const struct decode *d, const struct summary *s)
{
    (void)s;
    struct dot *g = d->state;
    char *p = at__out_reserve(o, LINE_FIXED);
    int err = p ? sort_graph(g) : -ENOMEM;
    if (err < 0)
        return err;
    at__out_commit(o, AT_PUT(p, "digraph actors {\n  rankdir=LR;\n"
                                "  node [shape=box, style=rounded];\n"));
    for (size_t first = 0, end; err == 0 && first < g->nnodes; first = end) {
        for (end = first; end < g->nnodes && g->nodes[end].trace == g->nodes[first].trace;)
            end++;
        err = put_cluster(o, d, g, first, end);
    }
    for (size_t i = 0, next = 0; err == 0 && i < g->nedges; i++)
        err = put_edge(o, d, g, (uint32_t)i, &next);
    if (err == 0 && !(p = at__out_reserve(o, LINE_FIXED)))
        err = -ENOMEM;
    if (err == 0)
        at__out_commit(o, AT_PUT(p, "}\n"));
    return err;
}

static void dot_destroy(void *state)
{
    struct dot *g = state;
    if (!g)
        return;
    at__hmap_free(&g->node_index);
    at__hmap_free(&g->edge_index);
    at__hmap_free(&g->name_index);
    free(g->nodes);
    free(g->edges);
    free(g->names);
    free(g);
}

static void *dot_create(const struct decode *d)
{
    (void)d;
    return calloc(1, sizeof(struct dot));
}

const struct output_ops at__dot_ops = {
    .name = "dot",
    .create = dot_create,
    .destroy = dot_destroy,
    .event = dot_event,
    .end = dot_end,
};
