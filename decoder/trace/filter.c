/* Event filters: the command line's values kept as given, then resolved in each trace (actor
 * and message names become that trace's ids) into idmaps and a table of kinds, so that testing
 * an event costs a few lookups. Times are absolute ts_ns, or "+DURATION" from the first event
 * of all the traces. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "at_events.h"
#include "at_format.h"
#include "filter.h"

int at__filter_add(struct filter_spec *spec, enum filter_option option, const char *value)
{
    const char **grown = realloc(spec->values[option], (spec->nvalues[option] + 1) * sizeof *grown);
    if (!grown)
        return -ENOMEM;
    grown[spec->nvalues[option]++] = value;
    spec->values[option] = grown;
    return 0;
}

bool at__filter_given(const struct filter_spec *spec)
{
    for (int i = 0; i < FILTER_NOPTIONS; i++)
        if (spec->nvalues[i])
            return true;
    return spec->from || spec->to;
}

/* ---- Parsing ----------------------------------------------------------------------------- */

/* s[0..len) as a decimal number. */
static bool parse_u64(const char *s, size_t len, uint64_t *v)
{
    uint64_t n = 0;
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || __builtin_mul_overflow(n, 10, &n) ||
            __builtin_add_overflow(n, (uint64_t)(s[i] - '0'), &n))
            return false;
    }
    *v = n;
    return true;
}

static uint64_t unit_ns(const char *unit)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(unit, units[i].name) == 0)
            return units[i].ns;
    return 0;
}

/* "12", "1.5ms", "250us": a duration in nanoseconds (fractions of a nanosecond dropped). */
static bool parse_duration(const char *s, uint64_t *ns)
{
    size_t whole = strspn(s, "0123456789");
    const char *frac = s + whole + (s[whole] == '.');
    size_t nfrac = s[whole] == '.' ? strspn(frac, "0123456789") : 0;
    uint64_t unit = unit_ns(frac + nfrac), w, f = 0, scale = 1;
    if (!unit || !parse_u64(s, whole, &w) || (s[whole] == '.' && nfrac == 0))
        return false;
    for (size_t i = 0; i < nfrac && i < 9; i++, scale *= 10)
        f = f * 10 + (uint64_t)(frac[i] - '0');
    return !__builtin_mul_overflow(w, unit, ns) &&
           !__builtin_add_overflow(*ns, f * unit / scale, ns);
}

/* The first event's ts_ns over every trace, from the frame headers. */
static uint64_t first_ns(const struct trace *traces, size_t n)
{
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t hint = 0;
        for (size_t j = 0; j < traces[i].nthreads; j++) {
            const struct thread *th = &traces[i].threads[j];
            for (size_t k = 0; k < th->nframes; k++) {
                uint64_t ns = at__clock_ns(&traces[i].clock, th->frames[k].first_tsc, &hint);
                first = ns < first ? ns : first;
            }
        }
    }
    return first == UINT64_MAX ? 0 : first;
}

static int parse_time(const char *s, uint64_t start, uint64_t *ns, FILE *diag)
{
    bool relative = s[0] == '+';
    if (parse_duration(s + relative, ns)) {
        /* A time past the last nanosecond is still a time (a trace's clock may start near
         * it, with no CLOCK record): the end of time, not an error. */
        if (relative && __builtin_add_overflow(*ns, start, ns))
            *ns = UINT64_MAX;
        return 0;
    }
    if (diag)
        fprintf(diag,
                "tracedecode: '%s' is not a time: use ts_ns nanoseconds, or +DURATION "
                "from the first event (units ns, us, ms, s)\n",
                s);
    return -EINVAL;
}

/* ---- Resolving names in one trace ------------------------------------------------------- */

/* Adds to out every id of the name space (an idmap over names->entries) named s[0..len). */
static int ids_named(const struct names *nm, const struct idmap *space, const char *s, size_t len,
                     struct idmap *out, bool *any)
{
    const struct hmap *m = &space->map;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        const struct name *n = &nm->entries[m->values[i]];
        if (n->s && n->len == len && memcmp(n->s, s, len) == 0) {
            *any = true;
            if (at__idmap_put(out, m->keys[i].a, 1) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

/* "kind_N", "send", or a kind a shim registered: its kind number, or -1. */
static int kind_named(const struct names *nm, const char *s, size_t len)
{
    uint64_t n;
    if (len > 5 && memcmp(s, "kind_", 5) == 0 && parse_u64(s + 5, len - 5, &n))
        return n >= 1 && n <= 255 ? (int)n : -1;
    for (unsigned k = 1; k < 256; k++) {
        const char *builtin = at__kind_builtin(k);
        const struct name *reg = at__names_get(nm, AT_NAME_EVENT, k);
        if ((builtin && strlen(builtin) == len && memcmp(builtin, s, len) == 0) ||
            (reg && reg->len == len && memcmp(reg->s, s, len) == 0))
            return (int)k;
    }
    return -1;
}

struct resolving {
    const struct trace *t;
    struct trace_filter *tf;
    bool found; /* the value selected something in this trace */
};

/* One value of one option, in one trace. Returns 0, -EINVAL (malformed) or -ENOMEM. */
static int resolve(struct resolving *r, enum filter_option option, const char *s, size_t len)
{
    const struct names *nm = &r->t->names;
    uint64_t n;
    bool number = parse_u64(s, len, &n);
    switch (option) {
    case FILTER_ACTOR:
        r->found |= number;
        return number ? at__idmap_put(&r->tf->actors, n, 1)
                      : ids_named(nm, &nm->actor, s, len, &r->tf->actors, &r->found);
    case FILTER_MSG:
        if (len > 5 && memcmp(s, "name_", 5) == 0 && parse_u64(s + 5, len - 5, &n)) {
            r->found = true;
            return at__idmap_put(&r->tf->names, n + nm->msg_shift, 1);
        }
        r->found |= number;
        return number ? at__idmap_put(&r->tf->msgs, n, 1)
                      : ids_named(nm, &nm->msg, s, len, &r->tf->names, &r->found);
    case FILTER_TID:
        r->found = number;
        return number && n <= UINT32_MAX ? at__idmap_put(&r->tf->tids, n, 1) : -EINVAL;
    case FILTER_EVENT: {
        int kind = kind_named(nm, s, len);
        if (kind > 0)
            r->tf->kinds[kind] = r->found = true;
        return 0;
    }
    default:
        return -EINVAL;
    }
}

static const char *const option_names[FILTER_NOPTIONS] = {"--actor", "--event", "--msg", "--tid"};

/* Every comma-separated item of every value of one option, in every trace. */
static int resolve_option(struct filter *f, const struct filter_spec *spec,
                          enum filter_option option, FILE *diag)
{
    for (size_t v = 0; v < spec->nvalues[option]; v++) {
        for (const char *s = spec->values[option][v];; s++) {
            size_t len = strcspn(s, ",");
            bool found = false;
            for (size_t i = 0; i < f->ntraces; i++) {
                struct resolving r = {&f->traces[i], &f->per_trace[i], false};
                int err = resolve(&r, option, s, len);
                if (err == -ENOMEM || (err < 0 && diag))
                    fprintf(diag, "tracedecode: %s: '%.*s': %s\n", option_names[option], (int)len,
                            s, err == -ENOMEM ? "out of memory" : "not a number");
                if (err < 0)
                    return err;
                found |= r.found;
            }
            if (!found && option == FILTER_EVENT) {
                if (diag)
                    fprintf(diag, "tracedecode: --event: no event kind '%.*s'\n", (int)len, s);
                return -EINVAL;
            }
            if (!found && diag)
                fprintf(diag, "tracedecode: %s: '%.*s' names nothing in the trace\n",
                        option_names[option], (int)len, s);
            s += len;
            if (*s == '\0')
                break;
        }
    }
    return 0;
}

int at__filter_compile(struct filter *f, const struct filter_spec *spec, const struct trace *traces,
                       size_t ntraces, FILE *diag)
{
    *f = (struct filter){.to_ns = UINT64_MAX, .traces = traces, .ntraces = ntraces};
    f->per_trace = calloc(ntraces ? ntraces : 1, sizeof *f->per_trace);
    if (!f->per_trace)
        return -ENOMEM;
    uint64_t start = spec->from || spec->to ? first_ns(traces, ntraces) : 0;
    int err = 0;
    if (spec->from)
        err = parse_time(spec->from, start, &f->from_ns, diag);
    if (err == 0 && spec->to)
        err = parse_time(spec->to, start, &f->to_ns, diag);
    for (int i = 0; i < FILTER_NOPTIONS && err == 0; i++) {
        f->any[i] = spec->nvalues[i] == 0;
        err = resolve_option(f, spec, (enum filter_option)i, diag);
    }
    if (err < 0)
        at__filter_free(f);
    return err;
}

static bool has(const struct idmap *m, uint64_t id)
{
    uint32_t ignored;
    return at__idmap_get(m, id, &ignored) == 0;
}

/* An event is about an actor when it is its actor, or the sender of a send or recv. */
static bool about(const struct trace_filter *tf, const struct at_event *ev)
{
    bool sender = ev->kind == AT_EV_SEND || ev->kind == AT_EV_RECV;
    return has(&tf->actors, ev->actor) || (sender && ev->peer && has(&tf->actors, ev->peer));
}

bool at__filter_match(const struct filter *f, const struct merged *e)
{
    const struct at_event *ev = e->ev;
    const struct trace_filter *tf = &f->per_trace[e->trace - f->traces];
    if (e->ts_ns < f->from_ns || e->ts_ns > f->to_ns)
        return false;
    if (!f->any[FILTER_EVENT] && !tf->kinds[ev->kind])
        return false;
    if (!f->any[FILTER_TID] && !has(&tf->tids, e->thread->tid))
        return false;
    if (!f->any[FILTER_MSG] && !(ev->name && has(&tf->names, ev->name)) &&
        !(ev->msg && has(&tf->msgs, ev->msg)))
        return false;
    return f->any[FILTER_ACTOR] || about(tf, ev);
}

void at__filter_free(struct filter *f)
{
    for (size_t i = 0; f->per_trace && i < f->ntraces; i++) {
        at__idmap_free(&f->per_trace[i].actors);
        at__idmap_free(&f->per_trace[i].names);
        at__idmap_free(&f->per_trace[i].msgs);
        at__idmap_free(&f->per_trace[i].tids);
    }
    free(f->per_trace);
    *f = (struct filter){0};
}

void at__filter_spec_free(struct filter_spec *spec)
{
    for (int i = 0; i < FILTER_NOPTIONS; i++)
        free(spec->values[i]);
    *spec = (struct filter_spec){0};
}
