/* Worker threads that park on a glibc condvar. A runtime shim whose workers do (shim/aether.c)
 * fills a struct at_workers with its hooks and calls at_workers_thread() on each worker thread
 * as it starts; shim/glibc.c's condvar wrappers call the hooks through at_workers_park() and
 * friends, so a worker's wait is recorded as that worker's park and unpark whether or not
 * ACTORTRACE_GLIBC is on, and never twice. The registry is in support.c; the library links
 * with or without any such shim. */
#ifndef AT_SHIM_WORKERS_H
#define AT_SHIM_WORKERS_H

#include "actortrace.h"

struct at_workers {
    const char *runtime;
    /* On a worker, before a condvar wait: records the park. */
    void (*park)(const void *cond);
    /* After that wait. Keeps errno. */
    void (*unpark)(const void *cond);
    /* On any thread, before a signal or broadcast: a worker waiting on cond will name the
     * caller as its waker. */
    void (*wake)(const void *cond);
};

/* Marks the calling thread as one of the runtime's workers, and registers the runtime's wake
 * hook on its first worker. */
void at_workers_thread(const struct at_workers *workers);

#define AT_WORKER_RUNTIMES 4
/* The runtime whose worker this thread is, or NULL; set once, by the thread itself. */
extern __thread const struct at_workers *at__thread_workers;
/* The wake hooks of the runtimes that have workers: at__worker_waker_count of them, the count
 * stored with release after each hook. */
extern void (*at__worker_wakers[AT_WORKER_RUNTIMES])(const void *cond);
extern unsigned at__worker_waker_count;

/* Before a condvar wait: the runtime of the calling worker, whose park is then recorded and
 * whose unpark must follow the wait (at_workers_unpark); NULL when the thread is no worker. */
static inline const struct at_workers *at_workers_park(const void *cond)
{
    const struct at_workers *workers = at__thread_workers;
    if (workers)
        workers->park(cond);
    return workers;
}

/* After the wait that at_workers_park returned workers for (or NULL). */
static inline void at_workers_unpark(const struct at_workers *workers, const void *cond)
{
    if (workers)
        workers->unpark(cond);
}

/* Calls the first count wake hooks (support.c): the loop is kept out of the wrappers, since
 * one runtime with workers in a process is the rule. */
void at__workers_wake_all(const void *cond, unsigned count);

/* Before a signal or broadcast. */
static inline void at_workers_wake(const void *cond)
{
    /* acquire: pairs with the registering release store, after the hook */
    unsigned n = __atomic_load_n(&at__worker_waker_count, __ATOMIC_ACQUIRE);
    if (AT_UNLIKELY(n > 1))
        at__workers_wake_all(cond, n);
    else if (n)
        at__worker_wakers[0](cond);
}

#endif
