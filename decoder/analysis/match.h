/* Send -> handler matching: which send each recv and step_begin takes its message from, and
 * each actor's mailbox depth (messages sent to it and not yet taken out). Shared by the views
 * that draw flows or measure latency; docs/DECODER.md states the assumptions. */
#ifndef MATCH_H
#define MATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"
#include "hmap.h"
#include "merge.h"

/* An actor of one trace, known to the matcher by a dense index. Id 0 stands for the unknown
 * receiver of the trace's sends that name none. */
struct match_actor {
    uint64_t id;
    uint32_t trace;      /* index into decode.traces */
    uint32_t head, tail; /* its mailbox: pending sends, oldest first */
    uint32_t depth, max_depth;
    bool takes; /* a recv or step has taken a message of its mailbox */
};

/* The most sends an actor's mailbox keeps pending. An actor that has taken none keeps its first
 * ones and later sends to it are only counted (untracked): a sink costs no memory past this,
 * and no more than a count per send. One that takes messages gives up its oldest (evicted).
 * Either way the matcher's memory stays bounded whatever the trace; the mailbox depth it
 * reports stops at this number. */
#define MATCH_MAILBOX_CAP 65536

/* A message sent and not yet handled. A send delivered to several receivers (a PUB's fan-out)
 * stays until its last delivery, each delivery with a flow of its own: flow, flow + 1, ... */
struct pending {
    uint64_t flow, send_ns, sender, msg;
    uint32_t name, actor; /* message name id; receiver's index */
    uint32_t prev, next;  /* mailbox links; next links the free list */
    uint32_t left;        /* deliveries still to come, this one included */
    bool taken;           /* a delivery was taken already */
    bool later;           /* a delivery's copy: not the send's first */
};

/* A message taken out of a mailbox by one of a thread's events, waiting for the other: its
 * step, after a recv; its recv, after a step that began first and took it by id. */
struct held {
    uint32_t entry; /* NONE when empty */
    bool by_step;   /* a step took it: the recv is to come */
};

#define MATCH_CACHE 64 /* recently seen actors, looked up before the hash map */

struct matcher {
    const struct decode *d;
    const struct trace *traces;
    struct {
        uint64_t id;
        uint32_t trace, index; /* index + 1; 0: empty */
    } cache[MATCH_CACHE];
    struct hmap actor_index; /* (trace, actor id) -> index into actors */
    struct match_actor *actors;
    uint32_t nactors;
    size_t actors_cap;
    struct hmap by_msg; /* (trace, msg id) -> index into entries */
    struct pending *entries;
    uint32_t nentries, free_list;
    size_t entries_cap;
    struct held **held; /* [trace][thread] */
    size_t ntraces;
    bool *ids;             /* [trace]: its sends carry message ids, so none is matched by order */
    uint64_t (*no_msg)[4]; /* [trace]: the paths of steps that handle no message */
    uint64_t next_flow;
    uint64_t waiting;    /* sends not yet taken out of a mailbox */
    uint64_t superseded; /* sends given up because a later send reused their message id */
    uint64_t untracked;  /* sends only counted: to a full mailbox whose actor took none, or
                            with neither receiver nor id */
    uint64_t evicted;    /* sends given up, oldest first, when their actor's mailbox was full */
    uint64_t by_id, by_order, steps_unmatched, recvs_unmatched;
    uint64_t steps_without_msg; /* timer, poller and task steps: they handle no message */
};

enum match_role { MATCH_NONE, MATCH_SEND, MATCH_RECV, MATCH_STEP };

struct match_result {
    enum match_role role; /* SEND: new flows; RECV, STEP: a send was found (flow != 0) */
    uint64_t flow;
    uint32_t flows; /* SEND: how many flows start here (its deliveries), from flow on */
    /* RECV, STEP: the flow ends here. A step ends the flow of the message it handled; a recv
     * ends it when a step it runs in handles it (a zloop reader's). After any other recv the
     * thread's next event says: a step of the message ends it there, else it ended at the recv
     * (the matcher lets the message go at that next event). */
    bool ends;
    bool delivery; /* RECV, STEP: a fan-out send's delivery other than its first */
    uint64_t send_ns, sender;
    uint32_t name;  /* the send's message name id */
    uint32_t actor; /* index of the event's actor; MATCH_NO_ACTOR when it has none */
    uint32_t depth; /* SEND, RECV, STEP: the receiver's mailbox depth after the event */
};

#define MATCH_NO_ACTOR UINT32_MAX

/* Matches the events of d's traces (its ZeroMQ socket messages across them: sockets.c).
 * Returns 0 or -ENOMEM. */
int at__match_init(struct matcher *m, const struct decode *d);

/* Advances the matching past e (events come in time order). Returns 0 or -ENOMEM. */
int at__match_event(struct matcher *m, const struct merged *e, struct match_result *r);

/* The index of an actor of trace number `trace`, added when new. Returns 0 or -ENOMEM. */
int at__match_actor(struct matcher *m, uint32_t trace, uint64_t id, uint32_t *index);

/* Sends never taken out of a mailbox: in flight when the trace ends, their recv was lost, or
 * given up (superseded, evicted, untracked). */
uint64_t at__match_unhandled(const struct matcher *m);

void at__match_free(struct matcher *m);

#endif
