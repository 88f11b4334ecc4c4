/* Traces of several hosts on one timeline (docs/DECODER.md, "Several hosts"): files of one boot
 * share CLOCK_MONOTONIC and keep it; another host's files are placed by their CLOCK_REALTIME
 * samples, then moved by the offset that matched ZeroMQ messages across hosts imply, when a
 * recv would otherwise come before its send. */
#ifndef CLOCKS_H
#define CLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"

/* The correction of one host's clock from the messages it exchanged with hosts already placed:
 * every recv must come at least 1 ns after its send. */
struct clock_offset {
    uint64_t to, from;    /* messages received by the host, and sent by it */
    int64_t lower, upper; /* the corrections that keep them in order: lower (when to > 0)
                           * .. upper (when from > 0) */
    int64_t applied;      /* nanoseconds added to the host's timestamps */
    bool conflict;        /* lower > upper: no single offset keeps every pair in order */
};

/* The estimate from the smallest one-way delay, as placed now, of the messages into the host
 * (to_min, over `to` messages) and out of it (from_min, over `from`). With both directions and a
 * pair out of order: half the difference of the delays (the midpoint of lower..upper, assuming
 * equal delays both ways); in one direction only: the smallest correction that puts every recv
 * after its send; 0 when every pair is in order already. */
struct clock_offset at__clock_offset(uint64_t to, int64_t to_min, uint64_t from, int64_t from_min);

/* Groups the traces by boot id and moves those of other hosts than the first file's onto its
 * timeline by their REALTIME samples; says so on d->diag. Call after the traces' clocks are
 * final (after recovery). Returns 0 or -ENOMEM. */
int at__clocks_place(struct decode *d);

/* After at__sockets_prepare: estimates and applies each other host's offset from the matched
 * messages between hosts, and reports it on d->diag. Returns 0 or -ENOMEM. */
int at__clocks_correct(struct decode *d);

/* The most bytes at__clocks_json writes. */
size_t at__clocks_json_bound(const struct decode *d);

/* ,"hosts":[...] for the summary when the traces come from several hosts; nothing otherwise. */
char *at__clocks_json(char *p, const struct decode *d);

void at__clocks_free(struct decode *d);

#endif
