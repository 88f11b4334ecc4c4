/* Worker threads that park on a glibc condvar: a runtime shim whose workers do (shim/aether.c)
 * marks its worker threads and defines these; shim/glibc.c calls them from its condvar
 * wrappers, so a worker's wait is recorded as that worker's park and unpark whether or not
 * ACTORTRACE_GLIBC is on, and never twice. */
#ifndef AT_SHIM_WORKERS_H
#define AT_SHIM_WORKERS_H

/* Before a condvar wait: 1 when the calling thread is a runtime's worker (the park is then
 * recorded, and at__worker_unpark must follow the wait), else 0. */
int at__worker_park(const void *cond);

/* After the wait that at__worker_park returned 1 for. Keeps errno. */
void at__worker_unpark(const void *cond);

/* Before a signal or broadcast: a worker waiting on cond will name the caller as its waker. */
void at__worker_wake(const void *cond);

#endif
