/* --format dot: the actor graph for Graphviz. A node per actor that sent or was sent a message
 * ("outside any actor" stands for sends with no sender), an edge per (sender, receiver) pair
 * labelled with its sends by message name, most frequent first; its width grows with the
 * count. Each trace file is a cluster, since actor ids are per process. Only send events count:
 * the graph is who talked to whom, whatever became of the messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "at_format.h"
#include "decode.h"
#include "hmap.h"
#include "output.h"

#define MAX_LABEL_NAMES 8 /* per edge; the rest is summed as "other" */
#define LINE_FIXED      256

struct edge {
    uint32_t trace, id; /* id: the index the edge had before sorting */
    uint64_t sender, receiver, count;
};

struct edge_name {
    uint32_t edge, name;
    uint64_t count;
};

struct dot {
    struct hmap *edge_index; /* [trace]: (sender, receiver) -> index into edges */
    struct edge *edges;
    size_t nedges, edges_cap;
    struct hmap name_index; /* (edge, name) -> index into names */
    struct edge_name *names;
    size_t nnames, names_cap;
    size_t ntraces;
};

/* The index of the edge sender -> receiver of one trace, added when new. */
static int edge_of(struct dot *g, uint32_t trace, uint64_t sender, uint64_t receiver,
                   uint32_t *index)
{
    struct hkey key = {sender, receiver};
    uint32_t *found = at__hmap_get(&g->edge_index[trace], key);
    if (found) {
        *index = *found;
        return 0;
    }
    if (at__array_reserve((void **)&g->edges, &g->edges_cap, g->nedges, sizeof *g->edges) < 0 ||
        at__hmap_put(&g->edge_index[trace], key, (uint32_t)g->nedges) < 0)
        return -ENOMEM;
    g->edges[g->nedges] = (struct edge){trace, (uint32_t)g->nedges, sender, receiver, 0};
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

static int dot_event(struct out *o, const struct decode *d, const struct merged *e)
{
    (void)o;
    struct dot *g = d->state;
    const struct at_event *ev = e->ev;
    if (ev->kind != AT_EV_SEND)
        return 0;
    uint32_t edge;
    int err = edge_of(g, (uint32_t)(e->trace - d->traces), ev->peer, ev->actor, &edge);
    if (err == 0) {
        g->edges[edge].count++;
        err = count_name(g, edge, ev->name);
    }
    return err;
}

/* ---- Writing the graph ------------------------------------------------------------------- */

static int by_edge(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    if (x->trace != y->trace)
        return x->trace < y->trace ? -1 : 1;
    if (x->sender != y->sender)
        return x->sender < y->sender ? -1 : 1;
    return x->receiver < y->receiver ? -1 : x->receiver > y->receiver;
}

/* Names grouped by edge, the most frequent first. */
static int by_count(const void *a, const void *b)
{
    const struct edge_name *x = a, *y = b;
    if (x->edge != y->edge)
        return x->edge < y->edge ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorts edges by (trace, sender, receiver) and names by edge, then count: the output is the
 * same whatever order the sends came in. */
static int sort_graph(struct dot *g)
{
    uint32_t *position = malloc((g->nedges ? g->nedges : 1) * sizeof *position);
    if (!position)
        return -ENOMEM;
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

/* "T:ID", quoted: a node id unique over every trace. */
static char *put_node_id(char *p, uint32_t trace, uint64_t actor)
{
    *p++ = '"';
    p = at__fmt_u64(p, trace);
    *p++ = ':';
    p = at__fmt_u64(p, actor);
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

static int put_node(struct out *o, const struct trace *t, uint32_t trace, uint64_t actor)
{
    const struct name *n = actor ? at__names_get(&t->names, AT_NAME_ACTOR, actor) : NULL;
    char *p = at__out_reserve(o, LINE_FIXED + (n ? at__json_str_bound(n->len) : 0));
    if (!p)
        return -ENOMEM;
    p = AT_PUT(put_node_id(AT_PUT(p, "    "), trace, actor), " [label=");
    if (actor == 0)
        p = AT_PUT(p, "\"outside any actor\", style=dashed");
    else if (n) {
        p = put_text(AT_PUT(p, "\""), n->s, n->len);
        p = AT_PUT(at__fmt_u64(AT_PUT(p, "\\n(actor "), actor), ")\"");
    } else
        p = AT_PUT(at__fmt_u64(AT_PUT(p, "\"actor "), actor), "\"");
    at__out_commit(o, AT_PUT(p, "];\n"));
    return 0;
}

/* Declares the actor's node at its first edge in the cluster. The actors declared are kept in
 * a set: searching the earlier edges instead was quadratic in the actors (a 146-byte trace of
 * 100,000 sends between distinct actors took 5 s; one of 2 million, over half an hour). */
static int put_new_node(struct out *o, const struct trace *t, uint32_t trace, uint64_t actor,
                        struct hmap *declared)
{
    struct hkey key = {actor, 0};
    if (at__hmap_get(declared, key))
        return 0;
    return at__hmap_put(declared, key, 0) < 0 ? -ENOMEM : put_node(o, t, trace, actor);
}

/* The cluster of one trace, edges[first..end): its nodes; edges go outside the clusters. */
static int put_cluster(struct out *o, const struct decode *d, const struct dot *g, size_t first,
                       size_t end)
{
    uint32_t trace = g->edges[first].trace;
    const struct trace *t = &d->traces[trace];
    const char *exe = t->process.exe ? t->process.exe : "";
    char *p = at__out_reserve(o, LINE_FIXED + at__json_str_bound(strlen(exe)));
    if (!p)
        return -ENOMEM;
    p = at__fmt_u64(AT_PUT(p, "  subgraph cluster_"), trace);
    p = put_text(AT_PUT(p, " {\n    label=\""), exe, strlen(exe));
    at__out_commit(o, AT_PUT(at__fmt_u64(AT_PUT(p, " (pid "), t->process.pid), ")\";\n"));
    struct hmap declared = {0};
    int err = 0;
    for (size_t i = first; err == 0 && i < end; i++) {
        err = put_new_node(o, t, trace, g->edges[i].sender, &declared);
        if (err == 0)
            err = put_new_node(o, t, trace, g->edges[i].receiver, &declared);
    }
    at__hmap_free(&declared);
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
        p = at__fmt_u64(AT_PUT(p, "name_"), name);
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

/* An edge and its label, from names[*next..], which it advances past the edge's names. */
static int put_edge(struct out *o, const struct trace *t, const struct dot *g, uint32_t edge,
                    size_t *next)
{
    const struct edge *e = &g->edges[edge];
    size_t first = *next, end = first;
    while (end < g->nnames && g->names[end].edge == edge)
        end++;
    *next = end;
    char *p = at__out_reserve(o, label_bound(t, g, first, end));
    if (!p)
        return -ENOMEM;
    p = put_node_id(AT_PUT(put_node_id(AT_PUT(p, "  "), e->trace, e->sender), " -> "), e->trace,
                    e->receiver);
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
    for (size_t first = 0, end; err == 0 && first < g->nedges; first = end) {
        for (end = first; end < g->nedges && g->edges[end].trace == g->edges[first].trace;)
            end++;
        err = put_cluster(o, d, g, first, end);
    }
    for (size_t i = 0, next = 0; err == 0 && i < g->nedges; i++)
        err = put_edge(o, &d->traces[g->edges[i].trace], g, (uint32_t)i, &next);
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
    for (size_t i = 0; g->edge_index && i < g->ntraces; i++)
        at__hmap_free(&g->edge_index[i]);
    free(g->edge_index);
    at__hmap_free(&g->name_index);
    free(g->edges);
    free(g->names);
    free(g);
}

static void *dot_create(const struct decode *d)
{
    struct dot *g = calloc(1, sizeof *g);
    if (g && !(g->edge_index = calloc(d->ntraces ? d->ntraces : 1, sizeof *g->edge_index))) {
        free(g);
        return NULL;
    }
    if (g)
        g->ntraces = d->ntraces;
    return g;
}

const struct output_ops at__dot_ops = {
    .name = "dot",
    .create = dot_create,
    .destroy = dot_destroy,
    .event = dot_event,
    .end = dot_end,
};
