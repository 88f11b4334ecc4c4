/* Layer losses (losses.c): overwrite mode's losses, one entry per thread whose blocks were
 * taken back, until the writer turns them into LOST records (before a dump, and at the end):
 * one record per block taken back would make the metadata grow with the length of the run.
 * Uses util and ring. */
#ifndef AT_PRELOAD_LOSSES_H
#define AT_PRELOAD_LOSSES_H

#include <stdint.h>

#include "ring.h"

/* Overwrite mode's losses are kept per thread, for this many threads at a time. */
#define AT_OVERWRITTEN_THREADS 64
/* Adds the events of one steal (at__ring_steal_oldest) to its thread's entry: 0, or -ENOSPC
 * when the table is full and has no entry for the thread (the caller flushes it with
 * at__losses_take and notes again). */
int at__losses_note(const struct at_lost *lost);
/* Moves up to `max` pending losses into out and returns how many, waiting at most timeout_ns
 * for the lock (AT_WAIT_FOREVER: no limit; 0 when it stays held). */
unsigned at__losses_take(struct at_lost *out, unsigned max, uint64_t timeout_ns);
/* In a forked child: the parent's losses are the parent's. */
void at__losses_after_fork(void);

#endif
