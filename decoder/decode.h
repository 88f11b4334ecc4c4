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
#include "session.h"
#include "trace.h"

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
