/* Layer writer (writer.c): the background thread that turns handed-over blocks into frames.
 * Uses every layer below it: util, config, ring, losses, meta (with stacks.c's publishing),
 * takeback. */
#ifndef AT_PRELOAD_WRITER_H
#define AT_PRELOAD_WRITER_H

#include <stdint.h>
#include "ring.h"

int at__writer_start(int fd, const char *trace_path);
/* Hands a FILLING block with `used` slots taken to the writer. */
void at__writer_submit(struct at_ring_block *block, uint32_t used);
/* Waits until the writer frees a block or `timeout_ns` passes (record.c, in every mode: see
 * may_wait there). */
void at__writer_wait_free(uint64_t timeout_ns);
/* A number that changes whenever the writer frees blocks or adds blocks to the pool: a thread
 * waiting for a block tells by it that the pool moves, however long its own wait has been. */
uint32_t at__writer_pool_moves(void);
/* Asks the writer to drain everything and write the end record, and waits up to timeout_ns
 * for it. Only sets a flag, wakes the writer and waits (async-signal-safe): it never joins,
 * closes, frees or takes a lock, so it may be called from a signal handler or _exit whatever
 * the program's threads hold. Returns 0 or -ETIMEDOUT (what is not written stays in the ring
 * file for recovery). */
int at__writer_stop(uint64_t timeout_ns);
/* 1 once the writer has written the end of the trace (its last pass after at__writer_stop). */
int at__writer_finished(void);
/* Wakes the writer (to prepare blocks a thread needs). */
void at__writer_wake(void);
/* Overwrite mode: write the blocks now. Async-signal-safe. */
void at__writer_request_dump(void);
void at__writer_after_fork(void);
/* Threads that took a block, for the END record; counted by record.c. Atomic, relaxed. */
extern uint64_t at__threads_total;

#endif
