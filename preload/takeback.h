/* Layer takeback (takeback.c): taking back the blocks of idle threads. Uses util, config,
 * ring and meta; hands the blocks it takes back to the writer's pass, never calls the writer. */
#ifndef AT_PRELOAD_TAKEBACK_H
#define AT_PRELOAD_TAKEBACK_H

#include <stdint.h>
#include "ring.h"
#include "util.h"

/* The slow path, with the thread's first block: the thread joins the registry. 0, -ENOMEM or,
 * when the registry must grow and may_allocate is 0 (a signal handler: the program threads
 * take the registry's lock only with signals blocked), -EAGAIN; then the thread records on,
 * and its block is never taken back. */
int at__takeback_register(struct at_thread_state *self, int may_allocate);
/* Thread exit, before its blocks are handed over: the writer no longer looks at the thread. */
void at__takeback_remove(struct at_thread_state *self);
/* The slow path, its room on `block` open: makes the block the thread's current one in the
 * writer's eyes (its ticket in `held`). */
void at__takeback_publish(struct at_thread_state *self, struct at_ring_block *block);
/* The slow path, handing its current block over: 1 when the block is still the thread's,
 * 0 when the writer took it back. */
int at__takeback_claim(struct at_thread_state *self);
/* A thread found no free block: asks the writer to take back idle threads' blocks. Returns
 * whether waiting for a block may help: membarrier is not refused, the process has had live
 * threads at least half as many as the pool's most blocks (else the pool grows, or the writer
 * is behind), and no pass since the thread's first ask (*barren, set by that ask from
 * AT_TAKEBACK_FIRST) found nothing to take back. When it returns 1, *wake_writer says whether
 * the caller is the first to ask since the writer's last pass, and so must wake it (one wake
 * for many); otherwise *wake_writer is left as it was. */
#define AT_TAKEBACK_FIRST UINT32_MAX
int at__takeback_ask(uint32_t *barren, int *wake_writer);
/* The writer, once per pass: when a thread asked, takes back idle threads' blocks, and in
 * overwrite mode the blocks handed over partly filled, for the writer to write and free at
 * once. Puts them in taken[] (at most max; a block's `used` is the slots to write) and returns
 * how many: nothing, and no lock or system call, when nobody asked. */
uint32_t at__takeback_pass(struct at_ring_block **taken, uint32_t max);
/* The end of the trace, once tracing is off (no thread counts or notes drops any more): the
 * drops registered threads have not noted yet, as LOST records. Waits 100 ms at most for the
 * registry and allocates nothing (the end may come in a fatal signal's handler). */
void at__takeback_note_drops(void);
void at__takeback_after_fork(void);
/* The committed slots at the start of a block whose owner took `taken` slots and is in no
 * at_record call: they are all before the first slot never written. */
uint32_t at__block_committed(struct at_ring_block *block, uint32_t taken);

#endif
