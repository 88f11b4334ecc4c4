/* The timeline the Perfetto and Chrome views draw: which track each event goes on, as a slice
 * or an instant, under which name, and with which flow (send -> the step that handled it).
 * Both formats get the same tracks and items and only encode them. */
#ifndef TIMELINE_H
#define TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "output.h"
#include "match.h"

enum tl_kind { TL_PROCESS, TL_THREAD, TL_ACTOR, TL_CORE };

struct tl_track {
    uint64_t seq;    /* from 1, in the order of first use; 0: not declared yet */
    uint64_t uuid;   /* the timeline's track base + seq: unique across outputs too */
    uint64_t parent; /* the uuid of the trace's process track; 0 for a process track */
    uint64_t ts_ns;  /* its first use */
    enum tl_kind kind;
    const struct trace *trace;
    uint64_t id; /* pid, tid, actor id or core number */
};

enum tl_type { TL_BEGIN = 1, TL_END = 2, TL_INSTANT = 3 }; /* Perfetto's TrackEvent.Type */

/* What an item is named after: a message name (steps on actor tracks), an actor (steps on
 * thread and core tracks), or an event kind and its message name (instants). */
enum tl_what { TL_NAME_MSG, TL_NAME_ACTOR, TL_NAME_EVENT };

struct tl_item {
    enum tl_type type;
    const struct tl_track *track;
    uint64_t ts_ns;
    enum tl_what what;
    uint8_t kind;      /* TL_NAME_EVENT: the event kind */
    uint64_t id;       /* message name id (TL_NAME_MSG, TL_NAME_EVENT) or actor id */
    uint64_t msg;      /* message id, shown with the item; 0: none */
    uint64_t flow_out; /* a send: the flow starts here; with flows_out > 1 (a fan-out), flows
                          flow_out .. flow_out + flows_out - 1 start here, one per delivery */
    uint32_t flows_out;
    uint64_t flow_via; /* the first of a message's recv and step: the flow passes here */
    uint64_t flow_in;  /* the later of them: the flow ends here */
    uint32_t stack;    /* the event's call stack id (stacks.h), on its own tracks; 0: none */
};

struct tl_sink {
    int (*track)(void *arg, const struct tl_track *t); /* a track's first use, parent first */
    int (*item)(void *arg, const struct tl_item *it);
    void *arg;
};

struct tl_actor {
    struct tl_track track;
    uint32_t open; /* steps begun and not ended */
};

#define TL_MAX_NESTED 8 /* nested steps per thread drawn on core tracks */
#define TL_NO_CORE    UINT32_MAX

struct tl_thread {
    struct tl_track track;
    uint64_t actors[TL_MAX_NESTED]; /* the actor of each open step, outermost first */
    uint32_t depth;                 /* steps begun and not ended */
    uint32_t on_core; /* the core whose track holds the pieces of its open steps; TL_NO_CORE */
    /* A recv on a message's flow, drawn once the thread's next event says whether a step of
     * that message follows (the flow passes the recv to it) or not (the flow ends at the
     * recv); track NULL: none. */
    struct tl_item recv;
};

/* A core's track holds the pieces of one thread's open steps at a time: its owner's. */
struct tl_core {
    struct tl_track track;
    struct tl_thread *owner; /* NULL: none open */
};

struct tl_cores {
    struct tl_core *cores; /* by core number */
    size_t n;
};

struct timeline {
    const struct decode *d;
    struct matcher match;
    struct tl_sink sink;
    uint64_t track_base, flow_base; /* of track uuids and flow ids, from the traces */
    uint64_t next_seq;
    uint64_t now;              /* the time of the event being drawn */
    struct tl_track *process;  /* [trace] */
    struct tl_thread **thread; /* [trace][thread] */
    struct tl_cores *cores;    /* [trace] */
    struct tl_actor *actors;   /* by matcher actor index */
    size_t nactors;
    char *scratch;
    size_t scratch_cap;
};

/* The name of an item or a track, in a buffer valid until the next call; NULL on -ENOMEM. */
const char *at__tl_item_name(struct timeline *tl, const struct tl_item *it, size_t *len);
const char *at__tl_track_name(struct timeline *tl, const struct tl_track *t, size_t *len);

/* What the states of the formats drawing a timeline begin with. */
struct tl_format {
    struct timeline tl;
    struct out *o; /* the output, during a callback */
};

/* A format's state of size bytes, beginning with a struct tl_format whose timeline calls track
 * and item with the state. NULL on -ENOMEM. */
void *at__tl_format_create(const struct decode *d, size_t size,
                           int (*track)(void *state, const struct tl_track *t),
                           int (*item)(void *state, const struct tl_item *it));

/* Frees such a state; accepts NULL. */
void at__tl_format_destroy(void *state);

/* The event callback of such a format: the event's items go to its track and item. */
int at__tl_format_event(struct out *o, const struct decode *d, const struct merged *e);

/* What the end callback of such a format does first: ends every open slice at the cut, which is the
 * --to time when it is before the end of the trace, else the last event's time. */
int at__tl_format_finish(struct out *o, const struct decode *d);

#endif
