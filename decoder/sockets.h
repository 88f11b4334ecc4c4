/* ZeroMQ sockets: the receivers of messages sent on ordinary sockets (not actor pipes), found by
 * joining the two ends of each endpoint and matching message fingerprints (docs/DECODER.md,
 * "ZeroMQ sockets"). The CZMQ shim records each socket's binds and connects as events of the
 * registered kinds zmq_bind / zmq_connect, and a fingerprint in the msg field of each send and
 * recv on such a socket; this file turns them into message ids, receivers and senders. */
#ifndef SOCKETS_H
#define SOCKETS_H

#include "decode.h"
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

/* JSONL: writes ",\"socket\":N" for the event at__sockets_apply last rewrote, and the actor and
 * pid of the other end when it is in another trace. At most 100 bytes. */
char *at__sockets_json(char *p, const struct decode *d);

/* A matched message whose send and recv are in two traces, at their times as placed now. */
struct remote_pair {
    uint32_t send_trace, recv_trace;
    uint64_t send_ns, recv_ns;
};

/* Calls each(arg, pair) for every matched message between two traces (for clocks.c). */
void at__sockets_each_remote(const struct decode *d,
                             void (*each)(void *arg, const struct remote_pair *pair), void *arg);

void at__sockets_free(struct decode *d);

#endif
