/* A decoding session: the traces named on the command line, read, merged onto one timeline
 * and written through one output format, with the summary and the exit status. */
#ifndef DECODE_H
#define DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "block.h"
#include "filter.h"
#include "output.h"
#include "trace.h"

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

/* Opens and indexes every trace. Returns 0, -EEXIST when a trace is given twice (the same
 * file, or a copy of one: reported on diag), or the first trace's error (see at__trace_open),
 * with nothing left open. */
int at__decode_open(struct decode *d, const char *const *paths, size_t n, FILE *diag);

/* Writes every event and the summary through ops into o (not flushed). Returns 0 when every
 * trace was clean, 1 when one was damaged or cut (still decoded as far as possible), or a
 * negative errno (-ENOMEM, or the format's error). The summary is copied to *s when s != NULL. */
int at__decode_run(struct decode *d, const struct output_ops *ops, struct out *o,
                   struct summary *s);

/* Whether e is a "stack" companion, which gives its stack to the thread's next event and is not
 * written out; for another event, counts its stack in s. */
bool at__decode_companion(struct merged *e, struct summary *s);

/* The summary of d's traces (files, threads, losses, damage) added to the counts of the events
 * written out, which s holds. */
struct summary at__decode_summary(const struct decode *d, struct summary s);

void at__decode_close(struct decode *d);

/* Applies a --names file to every trace (namefile.c). Returns 0, -EINVAL after a message on
 * stderr, or the negative errno of a failed open. */
int at__names_file_apply(struct decode *d, const char *path);

#endif
