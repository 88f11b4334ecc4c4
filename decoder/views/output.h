/* What output formats share: the table of callbacks through which the decoder drives a
 * format (one file per format, listed in views.def). */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "merge.h"
#include "out.h"
#include "session.h"
#include "trace.h"

struct decode;

/* An output format. Callbacks return 0 or a negative errno; NULL means "nothing to do". The
 * decoder calls create, begin, then thread for every thread of every trace, then event for each
 * event in time order (those the filters let through), then end, and last destroy. */
struct output_ops {
    const char *name;
    /* The format's state, found in d->state by the other callbacks; NULL on -ENOMEM. */
    void *(*create)(const struct decode *d);
    void (*destroy)(void *state);
    int (*begin)(struct out *o, const struct decode *d);
    int (*thread)(struct out *o, const struct decode *d, const struct trace *t,
                  const struct thread *th);
    int (*event)(struct out *o, const struct decode *d, const struct merged *e);
    int (*end)(struct out *o, const struct decode *d, const struct summary *s);
};

#define VIEW(name) extern const struct output_ops at__##name##_ops;
#include "views.def"
#undef VIEW

#endif
