/* The live model behind the top view and --follow --format stats: the run cut into seconds
 * from its first event, and for the last whole second, per actor: messages received and sent,
 * its mailbox depth (the largest in the second) and how it moved, the share of a core its
 * handlers took and their 99th percentile; per worker thread: the share of the second it spent
 * in handlers; the losses so far. */
#ifndef LIVE_H
#define LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"
#include "hist.h"
#include "hmap.h"
#include "merge.h"

#define LIVE_SECOND 1000000000ull

/* One actor's figures for one second. */
struct live_row {
    uint64_t received, sent; /* sends to it; sends it made */
    uint64_t busy_ns;        /* time with one of its handlers running */
    uint64_t p99_ns;         /* of the handlers that ended in the second */
    uint32_t depth;          /* its mailbox's largest depth in the second */
    int64_t trend;           /* depth minus the second before's */
};

struct live_actor {
    uint32_t trace;
    uint64_t id;
    struct live_row now, last; /* the second being gathered; the last whole one */
    bool active, was_active;   /* anything happened to it in now / last */
    uint32_t depth;            /* now: sends to it not yet taken out */
    uint32_t open;             /* handlers begun and not ended (nested ones count once) */
    uint64_t begun, busy_since;
    struct hist handlers; /* handler times of the second being gathered */
};

struct live_worker {
    uint32_t trace, tid;
    uint32_t open;
    uint64_t busy_since;
    uint64_t busy_ns, last_busy_ns;
};

struct live {
    bool started;
    uint64_t origin_ns;           /* the first event: second k is (origin + k-1 s, origin + k s] */
    uint64_t second;              /* the number of the second being gathered, from 1 */
    uint64_t last_ns;             /* the latest event */
    uint64_t events, last_events; /* events in the second being gathered; in the last one */
    bool ended;              /* every process ended: `last` is the run's last (partial) second */
    struct hmap actor_index; /* (trace, actor id) -> index into actors */
    struct live_actor *actors;
    size_t nactors, actors_cap;
    struct hmap worker_index; /* (trace, tid) -> index into workers */
    struct live_worker *workers;
    size_t nworkers, workers_cap;
    bool *takes_by_recv; /* [trace]: its runtime records recv, which takes from a mailbox */
    size_t ntraces;
};

/* Returns 0 or -ENOMEM. */
int at__live_init(struct live *l, size_t ntraces);

/* Adds an event (events come in time order). Returns 0 or -ENOMEM. */
int at__live_event(struct live *l, const struct decode *d, const struct merged *e);

/* Closes the seconds that end at or before ns, when every event up to ns was added. */
void at__live_advance(struct live *l, uint64_t ns);

/* The runs have ended: the second being gathered becomes the last one, as far as it went. */
void at__live_end(struct live *l);

/* The last second's number, 0 before the first one closed. */
static inline uint64_t at__live_shown(const struct live *l)
{
    return l->ended ? l->second : l->second - 1;
}

/* The actor's name ("name" or "#id", with "pid:" in front when d has several traces) into buf. */
void at__live_actor_name(const struct live *l, const struct decode *d, const struct live_actor *a,
                         char *buf, size_t len);

/* Column heads and one actor's row of the last second, as text (top and --format stats). */
extern const char at__live_heads[];
void at__live_row(const struct live *l, const struct decode *d, const struct live_actor *a,
                  char *buf, size_t len);

/* A worker's busy share of the last second and its name, as text. */
void at__live_worker_row(const struct live *l, const struct decode *d, const struct live_worker *w,
                         char *buf, size_t len);

void at__live_free(struct live *l);

#endif
