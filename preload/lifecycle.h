/* Layer lifecycle, the top: starting and stopping the recorder (lifecycle.c), and the slow
 * path's entry, which starts it at the first event; signals.c and process.c, the ends of a
 * process that finish the trace, are in this layer too. */
#ifndef AT_PRELOAD_LIFECYCLE_H
#define AT_PRELOAD_LIFECYCLE_H

#include <stdint.h>
#include <sys/types.h>
#include "util.h"

extern pid_t at__pid; /* this process image (a vfork child is another process on its memory) */

/* How long a fatal signal, _exit or exec waits for the writer to finish the trace. */
#define AT_FINISH_DEADLINE_NS (5 * 1000 * 1000 * 1000ull)

/* Starts the recorder if nobody has; returns the state after. Safe to call from any thread. */
int at__ensure_started(void);
/* Stops the recorder: every committed event and the end record go into the trace. Waits up to
 * timeout_ns for the writer (and first for a start under way on another thread); returns 0,
 * -ETIMEDOUT (the ring file is kept for recovery), -EALREADY (not running; before the first
 * event, no start may begin after this) or -ECHILD (called in a vfork child, which must not
 * touch it). */
int at__finish(uint64_t timeout_ns);
/* At load (process.c): the handler that finishes the trace when the program calls
 * quick_exit, registered before any of the program's, so that it runs after them. */
void at__process_init(void);
/* at__record_slow, the slow path's entry (declared in at_record.h), is defined in lifecycle.c,
 * above record.c: it starts the recorder at the first event (not in a signal handler), then
 * hands the event to at__record_event. */

#endif
