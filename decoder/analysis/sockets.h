/* ZeroMQ sockets: the receivers of messages sent on ordinary sockets (not actor pipes), found by
 * joining the two ends of each endpoint and matching message fingerprints (docs/DECODER.md,
 * "ZeroMQ sockets"). The CZMQ shim records each socket's binds and connects as events of the
 * registered kinds zmq_bind / zmq_connect, and a fingerprint in the msg field of each send and
 * recv on such a socket; this file turns them into message ids, receivers and senders. */
#ifndef SOCKETS_H
#define SOCKETS_H

#include "session.h"
#include "merge.h"

/* Reads every event of the traces once, joins the endpoints and matches the sends and recvs
 * (only when a trace registered a zmq_bind, zmq_connect or zmq_pipe kind; d->sockets stays NULL
 * otherwise). Returns 0 or -ENOMEM. */
int at__sockets_prepare(struct decode *d);

/* Rewrites e (pointing e->ev at a copy) when it is a socket event: a send or recv takes its
 * match's message id (below 2^32, the same on both ends), its receiver or sender when both ends
 * are in one trace, and no fingerprint; a zmq_bind / zmq_connect / zmq_unbind /
 * zmq_disconnect no longer has the socket number in peer. A pipe send without receiver takes
 * the actor of its recv. */
void at__sockets_apply(struct decode *d, struct merged *e);

/* JSONL: writes ",\"socket\":N" for the event at__sockets_apply last rewrote, and the actor,
 * pid and actor name of the other end when it is in another trace. At most 100 bytes and the
 * JSON string of at__sockets_remote_name. */
char *at__sockets_json(char *p, const struct decode *d);

/* The name, in its trace, of the other end's actor of the event at__sockets_apply rewrote
 * last, when that end is in another trace and its actor has a name; else NULL. */
const struct name *at__sockets_remote_name(const struct decode *d);

/* A matched message whose send and recv are in two traces, at their times as placed now. */
struct remote_pair {
    uint32_t send_trace, recv_trace;
    uint64_t send_ns, recv_ns;
};

/* Calls each(arg, pair) for every matched message between two traces (for clocks.c). */
void at__sockets_each_remote(const struct decode *d,
                             void (*each)(void *arg, const struct remote_pair *pair), void *arg);
/* The other end of the send or recv at__sockets_apply rewrote last, when it is in another
 * trace: that trace's index, the actor there (the receiver of a send, the first one for
 * fan-out; the sender of a recv) and the message's name id there. */
struct sockets_remote {
    uint32_t trace;
    uint64_t actor;
    uint32_t name;
};

/* Fills *out and returns true when the event at__sockets_apply rewrote last is a socket
 * message whose other end is in another trace; false otherwise. */
bool at__sockets_remote(const struct decode *d, struct sockets_remote *out);

/* Whether the event at__sockets_apply rewrote last is a recv of a fan-out send that an earlier
 * recv took too (a delivery other than its first): then fills *send with the send's trace,
 * sender and message name id. */
bool at__sockets_later_delivery(const struct decode *d, struct sockets_remote *send);

/* How many recvs took the send at__sockets_apply rewrote last (several for a PUB's fan-out,
 * counting those in its first receiver's trace); 1 for any other event. */
uint32_t at__sockets_deliveries(const struct decode *d);

/* The endpoint of the socket of the event at__sockets_apply rewrote last (its first bind or
 * connect), or NULL: names where a send whose receiver stays unknown went. */
const struct name *at__sockets_endpoint(const struct decode *d);

void at__sockets_free(struct decode *d);

#endif
