/* The stack a thread has left (stackroom.c), in the util layer. */
#ifndef AT_PRELOAD_STACKROOM_H
#define AT_PRELOAD_STACKROOM_H

#include <stddef.h>

/* Stack the recorder's start needs beyond its caller's frame (7.3 KiB measured, the first
 * call's symbol binding included), and a capture (4.4 to 5 KiB; 9.4 KiB for the process's
 * first, which fills libunwind's caches): tests/targets/progs/stack_room measure,
 * docs/STACKS.md. */
#define AT_START_STACK   (16 * 1024)
#define AT_CAPTURE_STACK (16 * 1024)

/* Reads the calling thread's stack bounds, once per thread. Not in a signal handler. */
void at__stack_room_learn(void);

/* Bytes of stack left below the caller, or SIZE_MAX when not known: the bounds are not read
 * yet, or the stack pointer is outside them (a signal stack, a coroutine's). Signal-safe. */
size_t at__stack_room(void);

#endif
