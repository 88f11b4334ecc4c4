/* --format stats: what the statistics view gathers while the events stream past (stats_gather.c),
 * and the report written from it at the end (stats_report.c). */
#ifndef STATS_H
#define STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "output.h"
#include "hist.h"
#include "match.h"

#define STATS_SLOTS      20   /* mailbox depth over time: the run cut in this many slots */
#define STATS_NAME_CACHE 4096 /* message name ids below this skip the hash map */

#define STATS_MAX_NESTED 8 /* nested steps per actor whose time is kept */

/* One message name of one trace. */
struct stat_msg {
    uint32_t trace, name;
    uint64_t sent, received;  /* send and recv events of that name */
    uint64_t handled;         /* steps that handled a message of that name */
    uint64_t handling_ns;     /* time in those steps, each from its begin to its end */
    struct hist latency;      /* send -> the step that handled it */
    struct hist recv_latency; /* send -> its recv (each delivery's, for a fan-out) */
};

/* A step begun and not ended. */
struct stat_step {
    uint64_t since;
    uint32_t msg; /* index + 1 into stats.msgs of the message name it handled; 0: none */
};

/* One actor, by its matcher index. */
struct stat_actor {
    uint64_t events, sent, received, steps; /* sent: as sender; received: sends to it */
    uint64_t busy_ns;                       /* time with at least one of its steps open */
    uint64_t last_unpark;
    uint32_t open; /* steps begun and not ended; the outermost STATS_MAX_NESTED in `step` */
    struct stat_step step[STATS_MAX_NESTED];
    uint32_t depth, last_slot;         /* mailbox depth now, and the slot it was set in */
    uint32_t depth_slots[STATS_SLOTS]; /* the largest depth in each slot */
    struct hist latency;
};

/* One function that sent: the caller frame of its sends' stacks (stacks.h). */
struct stat_sender {
    uint32_t trace, stack; /* a stack of one of its sends, which names it */
    uint64_t sends;
};

struct stat_thread {
    uint64_t events, parks, parked_ns, park_since, park_actor;
    uint64_t first_ns, last_ns;
    bool parked;
};

struct stats {
    struct matcher match;
    uint64_t kinds[256];                /* by slot: a built-in kind, or a registered name */
    uint8_t (*kind_slot)[256];          /* [trace][kind]: its slot in kinds */
    const struct name *kind_names[256]; /* the name of each registered kind's slot */
    struct stat_actor *actors;          /* by matcher actor index */
    size_t nactors;
    struct hmap msg_index; /* (trace, name) -> index into msgs */
    uint32_t **name_cache; /* [trace][name < STATS_NAME_CACHE]: index + 1 into msgs, 0 none */
    struct stat_msg *msgs;
    size_t nmsgs, msgs_cap;
    struct stat_thread **threads;   /* [trace][thread] */
    uint64_t first_ns, last_ns;     /* of the run, from the frame headers */
    uint64_t slot_end[STATS_SLOTS]; /* where each slot of the run ends */
    uint32_t slot;                  /* the slot of the latest event */
    /* top senders: (trace, module), function start -> index into senders */
    struct hmap sender_index;
    struct stat_sender *senders;
    size_t nsenders, senders_cap;
    uint64_t sends, sends_stacked; /* send events, and those with a stack */
};

/* Writes the report: text, or JSON when d->json. Returns 0 or -ENOMEM. */
int at__stats_report(struct out *o, const struct decode *d, struct stats *st,
                     const struct summary *s);

#endif
