/* How much stack the calling thread has left. The recorder's start (the first event of the
 * process: settings, files, the writer) and a call stack's capture (libunwind) need several
 * KiB more than the call they record (docs/STACKS.md has the figures); a thread with less than
 * that left would fault where the untraced program runs on. Each thread's stack bounds are read
 * once, with pthread_getattr_np (which may read /proc/self/maps and allocate: never in a signal
 * handler), and kept in thread-local storage for the checks. */
#include <pthread.h>
#include <stdint.h>

#include "stackroom.h"
#include "util.h"

static __thread struct {
    uintptr_t low, high; /* the thread's stack; high == 0: not known */
    int read;            /* tried once: a failure is not tried again at every capture */
} bounds __attribute__((tls_model("initial-exec")));

void at__stack_room_learn(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (bounds.read)
        return;
    bounds.read = 1;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        bounds.low = (uintptr_t)addr;
        bounds.high = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

/* Inlined into neither caller: its own frame is where the room is measured from. */
__attribute__((noinline)) size_t at__stack_room(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    /* elsewhere (a signal stack, a coroutine's) or not read yet: not known */
    return sp > bounds.low && sp <= bounds.high ? sp - bounds.low : SIZE_MAX;
}
