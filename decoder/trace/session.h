/* The decoding session as every layer above the trace reads it: the traces named on the
 * command line, what the analyses attached to them, and the totals of the summary line. What
 * opens, runs and closes a session is at the top (decode.h). */
#ifndef SESSION_H
#define SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "block.h"
#include "filter.h"
#include "trace.h"

struct sockets;
struct clocks;

struct decode {
    struct trace *traces;
    size_t ntraces;
    struct unpacker unpacker;
    FILE *diag;                  /* damage, warnings and losses are reported here; NULL: silent */
    const struct filter *filter; /* events that reach the format; NULL: all of them */
    bool json;                   /* a format with a text and a JSON form writes JSON (--json) */
    bool progress;               /* show a progress line on diag when it is a terminal */
    unsigned jobs;               /* 2 or more: decode blocks ahead on a helper thread */
    void *state;                 /* the running format's own state, from its create callback */
    struct sockets *sockets;     /* ZeroMQ socket matches (sockets.c); NULL: none */
    struct clocks *clocks;       /* several hosts' clocks (clocks.c); NULL: one host */
    const char *names_path;      /* the --names file; NULL: none */
    uint64_t names_given;        /* names it gave (namefile.c) */
    bool names_used;             /* an event carried one of them */
};

/* The totals the last output line reports. */
struct summary {
    uint64_t events;  /* events written out */
    uint64_t dropped; /* sum of LOST counts, every reason */
    uint64_t threads, damaged_frames, torn;
    uint64_t recovered;              /* events read from ring files (marked "recovered" in JSONL) */
    uint64_t stacks, stacks_skipped; /* "stack" companions, not counted in events; skipped
                                      * captures among them */
    bool truncated;                  /* a file has no END record or ends inside a frame */
    size_t files;
};

#endif
