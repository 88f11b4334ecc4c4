/* Traces of several hosts on one timeline.
 *
 * The traces are grouped by the boot id of their PROCESS record: files of one boot share
 * CLOCK_MONOTONIC, and files that do not say (older traces) are taken to share the first
 * file's. The first file's host is the reference and keeps its MONOTONIC nanoseconds, exact.
 * Each other host is moved by the difference of the two hosts' (REALTIME - MONOTONIC), the
 * median over their CLOCK samples: one constant per host, so that durations within a host stay
 * exact. How far that is from the truth, the samples cannot tell: they show how much
 * (REALTIME - MONOTONIC) varied on each host (NTP slewing or stepping it), not how far apart
 * the hosts' REALTIME clocks were.
 *
 * Matched ZeroMQ messages between hosts (sockets.c) bound the offset: every recv comes after
 * its send. A host is corrected from its messages with the hosts placed before it (the
 * reference first, then every host that has messages with a placed one), by
 * at__clock_offset, and only when some recv would otherwise precede its send. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "out.h"
#include "sockets.h"

struct host {
    const char *boot_id, *name; /* of its first trace */
    uint32_t files;
    bool sampled;      /* it has CLOCK samples */
    int64_t base;      /* the median of REALTIME - MONOTONIC over its samples */
    int64_t low, high; /* the smallest and largest of them */
    int64_t shift;     /* added by the REALTIME placement */
    bool placed;       /* the reference, or corrected from its messages */
    struct clock_offset offset;
};

/* The matched messages from one host to another: how many, and the smallest delay (recv minus
 * send) as the REALTIME placement put them. */
struct route {
    uint64_t count;
    int64_t min_delay;
};

struct clocks {
    struct host *hosts;
    size_t nhosts;
    uint32_t *host_of;    /* per trace */
    struct route *routes; /* [from * nhosts + to] */
    bool corrected;
};

/* a - b, held within int64_t: a damaged trace's clock samples may be anything. */
static int64_t minus(int64_t a, int64_t b)
{
    int64_t d;
    if (__builtin_sub_overflow(a, b, &d))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return d;
}

struct clock_offset at__clock_offset(uint64_t to, int64_t to_min, uint64_t from, int64_t from_min)
{
    struct clock_offset o = {.to = to, .from = from};
    o.lower = to ? minus(1, to_min) : INT64_MIN;
    o.upper = from ? minus(from_min, 1) : INT64_MAX;
    o.conflict = o.lower > o.upper;
    if (to && from && (o.lower > 0 || o.upper < 0 || o.conflict))
        o.applied = (int64_t)(((__int128)o.lower + o.upper) / 2);
    else if (to && o.lower > 0)
        o.applied = o.lower;
    else if (from && o.upper < 0)
        o.applied = o.upper;
    return o;
}

/* ---- Placing by REALTIME ---------------------------------------------------------------- */

static uint64_t moved(uint64_t ns, int64_t by)
{
    uint64_t magnitude = by < 0 ? 0 - (uint64_t)by : (uint64_t)by;
    if (by < 0)
        return ns < magnitude ? 0 : ns - magnitude;
    return ns > UINT64_MAX - magnitude ? UINT64_MAX : ns + magnitude;
}

/* Moves the host's traces by `by` nanoseconds: their samples, hence every timestamp. */
static void move_host(struct decode *d, uint32_t host, int64_t by)
{
    for (size_t i = 0; i < d->ntraces; i++) {
        struct clock_map *c = &d->traces[i].clock;
        for (size_t j = 0; d->clocks->host_of[i] == host && j < c->n; j++)
            c->samples[j].mono_ns = moved(c->samples[j].mono_ns, by);
    }
}

static const char *boot_of(const struct trace *t)
{
    return t->process.boot_id ? t->process.boot_id : "";
}

/* The host of trace i: one of the same boot, else a new one; a trace without a boot id joins
 * the first file's. */
static uint32_t host_for(struct clocks *c, const struct decode *d, size_t i)
{
    const char *boot = boot_of(&d->traces[i]);
    for (uint32_t h = 0; h < c->nhosts; h++)
        if (strcmp(c->hosts[h].boot_id, boot) == 0 || (i > 0 && !*boot && h == 0))
            return h;
    const char *name = d->traces[i].process.host;
    c->hosts[c->nhosts] = (struct host){.boot_id = boot, .name = name ? name : ""};
    return (uint32_t)c->nhosts++;
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* base, low and high of a host from its traces' samples. Returns 0 or -ENOMEM. */
static int measure(struct clocks *c, const struct decode *d, uint32_t host)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < d->ntraces; i++)
        n += c->host_of[i] == host ? d->traces[i].clock.n : 0;
    int64_t *offsets = malloc((n ? n : 1) * sizeof *offsets);
    if (!offsets)
        return -ENOMEM;
    for (size_t i = 0; i < d->ntraces; i++)
        for (size_t j = 0; c->host_of[i] == host && j < d->traces[i].clock.n; j++) {
            const struct clock_sample *s = &d->traces[i].clock.samples[j];
            offsets[k++] = (int64_t)(s->real_ns - s->mono_ns);
        }
    qsort(offsets, n, sizeof *offsets, by_value);
    struct host *h = &c->hosts[host];
    h->sampled = n > 0;
    if (n > 0) {
        h->base = offsets[n / 2];
        h->low = offsets[0];
        h->high = offsets[n - 1];
    }
    free(offsets);
    return 0;
}

static void report_placement(const struct decode *d)
{
    const struct clocks *c = d->clocks;
    if (!d->diag)
        return;
    fprintf(d->diag,
            "tracedecode: the traces come from %zu hosts (boots): each is placed on the "
            "CLOCK_MONOTONIC of the first file's through its CLOCK_REALTIME samples\n",
            c->nhosts);
    for (size_t h = 0; h < c->nhosts; h++) {
        const struct host *x = &c->hosts[h];
        fprintf(d->diag,
                "tracedecode: host %s (boot %s, %u file%s): moved by %lld ns; its REALTIME - "
                "MONOTONIC varied by %lld ns over its samples\n",
                x->name, *x->boot_id ? x->boot_id : "unknown", x->files, x->files == 1 ? "" : "s",
                (long long)x->shift, (long long)minus(x->high, x->low));
    }
    fprintf(d->diag, "tracedecode: how far apart the hosts' REALTIME clocks were (NTP keeps them "
                     "milliseconds apart at best) does not show in the samples\n");
}

static int group(struct clocks *c, const struct decode *d)
{
    for (size_t i = 0; i < d->ntraces; i++) {
        c->host_of[i] = host_for(c, d, i);
        c->hosts[c->host_of[i]].files++;
    }
    for (uint32_t h = 0; h < c->nhosts; h++)
        if (measure(c, d, h) < 0)
            return -ENOMEM;
    return 0;
}

int at__clocks_place(struct decode *d)
{
    struct clocks *c = calloc(1, sizeof *c);
    size_t n = d->ntraces ? d->ntraces : 1;
    if (!c || !(c->hosts = calloc(n, sizeof *c->hosts)) ||
        !(c->host_of = calloc(n, sizeof *c->host_of))) {
        free(c ? c->hosts : NULL);
        free(c);
        return -ENOMEM;
    }
    d->clocks = c;
    int err = group(c, d);
    if (err < 0 || c->nhosts < 2) { /* one host: MONOTONIC as it is */
        at__clocks_free(d);
        return err;
    }
    c->hosts[0].placed = true;
    for (uint32_t h = 1; h < c->nhosts; h++) {
        struct host *x = &c->hosts[h];
        x->shift = x->sampled && c->hosts[0].sampled ? minus(x->base, c->hosts[0].base) : 0;
        move_host(d, h, x->shift);
    }
    report_placement(d);
    return 0;
}

/* ---- Correcting from matched messages --------------------------------------------------- */

static void add_message(void *arg, const struct remote_pair *p)
{
    struct clocks *c = arg;
    uint32_t from = c->host_of[p->send_trace], to = c->host_of[p->recv_trace];
    struct route *r = &c->routes[from * c->nhosts + to];
    int64_t delay = (int64_t)(p->recv_ns - p->send_ns);
    if (from != to && (r->count++ == 0 || delay < r->min_delay))
        r->min_delay = delay;
}

/* Corrects host h from its messages with the placed hosts, whose own corrections count in the
 * delays; false when it has none. */
static bool correct(struct decode *d, uint32_t h)
{
    struct clocks *c = d->clocks;
    uint64_t to = 0, from = 0;
    int64_t to_min = INT64_MAX, from_min = INT64_MAX;
    for (uint32_t g = 0; g < c->nhosts; g++) {
        const struct route *in = &c->routes[g * c->nhosts + h],
                           *out = &c->routes[h * c->nhosts + g];
        int64_t applied = c->hosts[g].offset.applied;
        if (!c->hosts[g].placed || g == h)
            continue;
        if (in->count && minus(in->min_delay, applied) < to_min)
            to_min = minus(in->min_delay, applied);
        if (out->count && minus(out->min_delay, minus(0, applied)) < from_min)
            from_min = minus(out->min_delay, minus(0, applied));
        to += in->count;
        from += out->count;
    }
    if (to + from == 0)
        return false;
    c->hosts[h].offset = at__clock_offset(to, to_min, from, from_min);
    c->hosts[h].placed = true;
    move_host(d, h, c->hosts[h].offset.applied);
    return true;
}

static void report_offset(const struct decode *d, const struct host *x)
{
    const struct clock_offset *o = &x->offset;
    char lower[24] = "-inf", upper[24] = "+inf";
    if (o->to)
        snprintf(lower, sizeof lower, "%lld", (long long)o->lower);
    if (o->from)
        snprintf(upper, sizeof upper, "%lld", (long long)o->upper);
    fprintf(d->diag,
            "tracedecode: host %s: %llu messages in from the other hosts, %llu out; the "
            "offsets that put every recv after its send: %s .. %s ns; %s %lld ns\n",
            x->name, (unsigned long long)o->to, (unsigned long long)o->from, lower, upper,
            o->conflict  ? "none does (the clocks drifted apart?): moved by the midpoint,"
            : o->applied ? "moved by"
                         : "in order already, moved by",
            (long long)o->applied);
}

int at__clocks_correct(struct decode *d)
{
    struct clocks *c = d->clocks;
    if (!c || c->corrected)
        return 0;
    c->corrected = true;
    if (!(c->routes = calloc(c->nhosts * c->nhosts, sizeof *c->routes)))
        return -ENOMEM;
    at__sockets_each_remote(d, add_message, c);
    for (bool progress = true; progress;) {
        progress = false;
        for (uint32_t h = 1; h < c->nhosts; h++)
            if (!c->hosts[h].placed && correct(d, h)) {
                progress = true;
                if (d->diag)
                    report_offset(d, &c->hosts[h]);
            }
    }
    return 0;
}

/* ---- The report in JSON ------------------------------------------------------------------- */

static char *fmt_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return at__fmt_u64(p, 0 - (uint64_t)v);
    }
    return at__fmt_u64(p, (uint64_t)v);
}

static char *bound(char *p, bool known, int64_t v)
{
    return known ? fmt_i64(p, v) : AT_PUT(p, "null");
}

size_t at__clocks_json_bound(const struct decode *d)
{
    const struct clocks *c = d->clocks;
    size_t n = 16;
    for (size_t h = 0; c && h < c->nhosts; h++)
        n += 400 + at__json_str_bound(strlen(c->hosts[h].name)) +
             at__json_str_bound(strlen(c->hosts[h].boot_id));
    return n;
}

static char *host_json(char *p, const struct host *x)
{
    const struct clock_offset *o = &x->offset;
    p = at__fmt_json_str(AT_PUT(p, "{\"host\":"), x->name, strlen(x->name));
    p = at__fmt_json_str(AT_PUT(p, ",\"boot_id\":"), x->boot_id, strlen(x->boot_id));
    p = at__fmt_u64(AT_PUT(p, ",\"files\":"), x->files);
    p = fmt_i64(AT_PUT(p, ",\"realtime_shift_ns\":"), x->shift);
    p = fmt_i64(AT_PUT(p, ",\"realtime_spread_ns\":"), minus(x->high, x->low));
    p = at__fmt_u64(AT_PUT(p, ",\"messages_in\":"), o->to);
    p = at__fmt_u64(AT_PUT(p, ",\"messages_out\":"), o->from);
    p = fmt_i64(AT_PUT(p, ",\"offset_ns\":"), o->applied);
    p = bound(AT_PUT(p, ",\"offset_min_ns\":"), o->to > 0, o->lower);
    p = bound(AT_PUT(p, ",\"offset_max_ns\":"), o->from > 0, o->upper);
    return AT_PUT(p, "}");
}

char *at__clocks_json(char *p, const struct decode *d)
{
    const struct clocks *c = d->clocks;
    if (!c)
        return p;
    p = AT_PUT(p, ",\"hosts\":[");
    for (size_t h = 0; h < c->nhosts; h++)
        p = host_json(h ? AT_PUT(p, ",") : p, &c->hosts[h]);
    return AT_PUT(p, "]");
}

void at__clocks_free(struct decode *d)
{
    struct clocks *c = d->clocks;
    if (!c)
        return;
    free(c->hosts);
    free(c->host_of);
    free(c->routes);
    free(c);
    d->clocks = NULL;
}
