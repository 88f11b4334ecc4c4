/* Event filters (--actor, --event, --msg, --tid, --from, --to), applied to the merged events
 * before any output format sees them. Values given to one option are alternatives; different
 * options must all hold. Names are resolved in each trace, since ids are per process. */
#ifndef FILTER_H
#define FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "idmap.h"
#include "merge.h"

enum filter_option { FILTER_ACTOR, FILTER_EVENT, FILTER_MSG, FILTER_TID, FILTER_NOPTIONS };

/* The filters as given on the command line. */
struct filter_spec {
    const char **values[FILTER_NOPTIONS]; /* each a comma-separated list */
    size_t nvalues[FILTER_NOPTIONS];
    const char *from, *to; /* NULL: unbounded */
};

/* One trace's filter: the ids each option selects there. */
struct trace_filter {
    struct idmap actors, names, msgs, tids;
    bool kinds[256];
};

struct filter {
    bool any[FILTER_NOPTIONS]; /* the option was not given: everything passes it */
    uint64_t from_ns, to_ns;   /* inclusive */
    const struct trace *traces;
    struct trace_filter *per_trace;
    size_t ntraces;
};

/* Adds the value of one option to spec. Returns 0 or -ENOMEM. */
int at__filter_add(struct filter_spec *spec, enum filter_option option, const char *value);

/* Whether spec filters anything. */
bool at__filter_given(const struct filter_spec *spec);

/* Resolves spec against the traces. Returns 0, or -EINVAL after telling diag what is wrong (a
 * malformed number or time, an event kind no trace knows), or -ENOMEM. */
int at__filter_compile(struct filter *f, const struct filter_spec *spec, const struct trace *traces,
                       size_t ntraces, FILE *diag);

bool at__filter_match(const struct filter *f, const struct merged *e);

void at__filter_free(struct filter *f);
void at__filter_spec_free(struct filter_spec *spec);

#endif
