/* Call stacks (stacks.c), in the meta layer: it uses util, config and meta, and the writer
 * calls its publishing. Its capture records the companion event through at_record, the
 * installed hot path, as a shim does: the one way up (preload/README.md). */
#ifndef AT_PRELOAD_STACKS_H
#define AT_PRELOAD_STACKS_H

#include <stdint.h>

/* At load (lifecycle.c's constructor, after patching): the settings, libunwind, the companion
 * kind, and the address ranges whose frames are left out. */
void at__stacks_init(void);
/* The writer thread: symbolizes the stacks captured since the last call and queues their
 * MODULE and STACK records. Never called on the recording path. While finishing (a thread
 * stopped for good may hold malloc's lock) it allocates nothing: what does not fit the
 * metadata queue's memory is left out. */
void at__stacks_publish(int finishing);
/* Whether a capture runs on this thread. A jump out of a signal handler (signals.c) leaves any
 * capture it interrupted: the flag goes back to what it was when the handler around began. */
uint32_t at__stack_busy(void);
void at__stack_set_busy(uint32_t busy);
/* The section of the one function that calls the program's signal handlers (signals.c): a
 * frame whose return address lies there is where a signal was delivered, and a capture in a
 * handler stops at it. */
#define AT_SIGNAL_CALL_SECTION "at_signal_call"

#endif
