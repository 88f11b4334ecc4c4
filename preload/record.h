/* Layer record (record.c): the slow path of recording and each thread's life as the
 * recorder sees it. Uses every layer below it, up to the writer. */
#ifndef AT_PRELOAD_RECORD_H
#define AT_PRELOAD_RECORD_H

#include <stdint.h>

/* The slow path once the recorder's state is known (lifecycle.c's at__record_slow starts it
 * first, and keeps errno around this): records the event, taking a block or the spare, or
 * drops and counts it. */
void at__record_event(int state, unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg,
                      uint32_t name, unsigned path);
/* Whether the event is not recorded at all: the recorder's own thread, or drop mode while no
 * block is free (the event is then counted as dropped). The slow path's first test. */
int at__record_skips(void);
/* Once per process image: the thread-exit key, whose destructor hands a thread's partial
 * blocks over. 0 or a negative errno. */
int at__record_init(void);
void at__record_after_fork(void);

#endif
