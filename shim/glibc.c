/* Shim for glibc's waiting primitives, where most runtimes' worker threads park.
 *
 * Wrapped: pthread_cond_wait / timedwait / signal / broadcast (the GLIBC_2.3.2 versions, see
 * below), pthread_cond_clockwait, sem_wait / timedwait / clockwait / post, C11 cnd_wait /
 * timedwait / signal / broadcast, and syscall(SYS_futex, ...) WAIT / WAIT_BITSET / WAKE /
 * WAKE_BITSET. A wait records park before the call and unpark after it returns; a wake-up call
 * records the registered event "wake" before it. All three carry the waited-on object's address
 * as peer, so a waker and the thread it woke are joined on it, and a path naming the object's
 * kind: "cond", "sem", "cnd", "futex". actor is the actor whose handler runs on the thread (0
 * when none: the event's tid tells the thread).
 *
 * These fire in every program, so they are off unless ACTORTRACE_GLIBC=1 (docs/shims/glibc.md).
 * The condvar waits of a runtime's worker threads are the exception (workers.h): they are
 * recorded as the worker's park and unpark by the runtime's shim, always.
 *
 * Versions: pthread_cond_* exist twice in libc.so.6, the current GLIBC_2.3.2 functions and the
 * GLIBC_2.2.5 ones kept for binaries built before the condvar rewrite, which take a different
 * object. An unversioned definition here would also catch calls bound to the old version and
 * send them to the new one, so the wrappers are defined as pthread_cond_*@@GLIBC_2.3.2 (the node
 * is declared in shim/glibc.map): calls bound to GLIBC_2.2.5 go past us to glibc untouched. The
 * other symbols have one implementation under all their versions: plain definitions do. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

#include "actortrace.h"
#include "support.h"
#include "workers.h"

int at__config_glibc(void); /* preload/config.c: ACTORTRACE_GLIBC, read on first use */

#define CONDVAR_VERSION "GLIBC_2.3.2"

/* The condvar wrappers' own names, typed as glibc declares the functions they stand for. */
__typeof__(pthread_cond_wait) at__glibc_cond_wait;
__typeof__(pthread_cond_timedwait) at__glibc_cond_timedwait;
__typeof__(pthread_cond_signal) at__glibc_cond_signal;
__typeof__(pthread_cond_broadcast) at__glibc_cond_broadcast;

AT_REAL(pthread_cond_wait);
AT_REAL(pthread_cond_timedwait);
AT_REAL(pthread_cond_clockwait);
AT_REAL(pthread_cond_signal);
AT_REAL(pthread_cond_broadcast);
AT_REAL(sem_wait);
AT_REAL(sem_timedwait);
AT_REAL(sem_clockwait);
AT_REAL(sem_post);
AT_REAL(cnd_wait);
AT_REAL(cnd_timedwait);
AT_REAL(cnd_signal);
AT_REAL(cnd_broadcast);
AT_REAL(syscall);

static const struct at_shim shim = {
    .reals = AT_SHIM_REALS(
        AT_SHIM_REAL_VERSION(pthread_cond_wait, CONDVAR_VERSION),
        AT_SHIM_REAL_VERSION(pthread_cond_timedwait, CONDVAR_VERSION),
        AT_SHIM_REAL(pthread_cond_clockwait),
        AT_SHIM_REAL_VERSION(pthread_cond_signal, CONDVAR_VERSION),
        AT_SHIM_REAL_VERSION(pthread_cond_broadcast, CONDVAR_VERSION), AT_SHIM_REAL(sem_wait),
        AT_SHIM_REAL(sem_timedwait), AT_SHIM_REAL(sem_clockwait), AT_SHIM_REAL(sem_post),
        AT_SHIM_REAL(cnd_wait), AT_SHIM_REAL(cnd_timedwait), AT_SHIM_REAL(cnd_signal),
        AT_SHIM_REAL(cnd_broadcast), AT_SHIM_REAL(syscall)),
    .runtime = "glibc",
};

enum object { OBJ_COND, OBJ_SEM, OBJ_CND, OBJ_FUTEX, OBJ_COUNT };
/* The objects' paths, then the kind "wake". */
enum label { KIND_WAKE = OBJ_COUNT, LABELS };
static const char *const label_names[LABELS] = {"cond", "sem", "cnd", "futex", "wake"};
static unsigned label_ids[LABELS];
static const struct at_shim_labels labels = {label_names, KIND_WAKE, label_ids};

static int shim_on = -1;     /* ACTORTRACE_GLIBC, -1 until read; atomic, relaxed */
static __thread int in_shim; /* recording here: a nested wrapper only forwards */

static int enabled(void)
{
    /* relaxed: pairs with the store below only in value: racing threads store the same */
    int on = __atomic_load_n(&shim_on, __ATOMIC_RELAXED);
    if (AT_UNLIKELY(on < 0)) {
        on = at__config_glibc();
        /* the labels now, unless in a signal handler (see record): a wake a handler makes later
         * is then recorded */
        for (unsigned i = 0; on && !at__in_signal_handler() && i < LABELS; i++)
            at_shim_label(&labels, i);
        /* relaxed: the same setting whichever thread stores it */
        __atomic_store_n(&shim_on, on, __ATOMIC_RELAXED);
    }
    /* a runtime's wrapper (its park, its receive) already records this wait or wake-up */
    return on && !in_shim && !at_in_wrapper();
}

static unsigned path_of(enum object object)
{
    return at_shim_label(&labels, (unsigned)object);
}

static unsigned wake_event(void)
{
    return at_shim_label(&labels, KIND_WAKE);
}

enum event { PARK, UNPARK, WAKE };

/* A signal handler (sem_post is async-signal-safe, the way a handler wakes a thread) does not
 * register a label: the registry's lock and malloc may be what it interrupted. There a path not
 * registered yet is left out, and a wake, whose kind is a label, is dropped and counted. */
static void record(enum event event, enum object object, const void *address)
{
    in_shim = 1;
    int handler = at__in_signal_handler();
    unsigned path = handler ? at_shim_label_registered(&labels, object) : path_of(object);
    unsigned kind = event == PARK     ? AT_EV_PARK
                    : event == UNPARK ? AT_EV_UNPARK
                    : handler         ? at_shim_label_registered(&labels, KIND_WAKE)
                                      : wake_event();
    if (kind)
        at_record(kind, at_current_actor(), (uint64_t)(uintptr_t)address, 0, 0, path);
    else
        at__record_drop();
    in_shim = 0;
}

/* Before a wait: records park; returns whether it did, for unpark() after the wait. */
static int park(enum object object, const void *address)
{
    if (!enabled())
        return 0;
    record(PARK, object, address);
    return 1;
}

/* After the wait, which may have set errno. */
static void unpark(int parked, enum object object, const void *address)
{
    if (parked) {
        int saved = errno;
        record(UNPARK, object, address);
        errno = saved;
    }
}

/* Before a wake-up call. */
static void wake(enum object object, const void *address)
{
    if (enabled())
        record(WAKE, object, address);
}

/* ---- pthread condition variables (GLIBC_2.3.2) ---- */

AT_EXPORT __attribute__((symver("pthread_cond_wait@@" CONDVAR_VERSION))) int
at__glibc_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
    AT_SHIM_RESOLVE(&shim, real_pthread_cond_wait);
    const struct at_workers *worker = at_workers_park(cond);
    int parked = !worker && park(OBJ_COND, cond);
    int result = real_pthread_cond_wait(cond, mutex);
    at_workers_unpark(worker, cond);
    unpark(parked, OBJ_COND, cond);
    return result;
}

AT_EXPORT __attribute__((symver("pthread_cond_timedwait@@" CONDVAR_VERSION))) int
at__glibc_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                         const struct timespec *abstime)
{
    AT_SHIM_RESOLVE(&shim, real_pthread_cond_timedwait);
    const struct at_workers *worker = at_workers_park(cond);
    int parked = !worker && park(OBJ_COND, cond);
    int result = real_pthread_cond_timedwait(cond, mutex, abstime);
    at_workers_unpark(worker, cond);
    unpark(parked, OBJ_COND, cond);
    return result;
}

AT_EXPORT __attribute__((symver("pthread_cond_signal@@" CONDVAR_VERSION))) int
at__glibc_cond_signal(pthread_cond_t *cond)
{
    AT_SHIM_RESOLVE(&shim, real_pthread_cond_signal);
    at_workers_wake(cond);
    wake(OBJ_COND, cond);
    return real_pthread_cond_signal(cond);
}

AT_EXPORT __attribute__((symver("pthread_cond_broadcast@@" CONDVAR_VERSION))) int
at__glibc_cond_broadcast(pthread_cond_t *cond)
{
    AT_SHIM_RESOLVE(&shim, real_pthread_cond_broadcast);
    at_workers_wake(cond);
    wake(OBJ_COND, cond);
    return real_pthread_cond_broadcast(cond);
}

/* Since glibc 2.30; one implementation under GLIBC_2.30 and GLIBC_2.34. */
AT_EXPORT int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                                     const struct timespec *abstime)
{
    AT_SHIM_RESOLVE(&shim, real_pthread_cond_clockwait);
    int parked = park(OBJ_COND, cond);
    int result = real_pthread_cond_clockwait(cond, mutex, clock, abstime);
    unpark(parked, OBJ_COND, cond);
    return result;
}

/* ---- POSIX semaphores: each call to a waiting function is a park, whether or not the count
 * let it through at once ---- */

AT_EXPORT int sem_wait(sem_t *sem)
{
    AT_SHIM_RESOLVE(&shim, real_sem_wait);
    int parked = park(OBJ_SEM, sem);
    int result = real_sem_wait(sem);
    unpark(parked, OBJ_SEM, sem);
    return result;
}

AT_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
    AT_SHIM_RESOLVE(&shim, real_sem_timedwait);
    int parked = park(OBJ_SEM, sem);
    int result = real_sem_timedwait(sem, abstime);
    unpark(parked, OBJ_SEM, sem);
    return result;
}

AT_EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
    AT_SHIM_RESOLVE(&shim, real_sem_clockwait);
    int parked = park(OBJ_SEM, sem);
    int result = real_sem_clockwait(sem, clock, abstime);
    unpark(parked, OBJ_SEM, sem);
    return result;
}

AT_EXPORT int sem_post(sem_t *sem)
{
    AT_SHIM_RESOLVE(&shim, real_sem_post);
    wake(OBJ_SEM, sem);
    return real_sem_post(sem);
}

/* ---- C11 threads: cnd_* call glibc's condvar code directly, not pthread_cond_* ---- */

AT_EXPORT int cnd_wait(cnd_t *cond, mtx_t *mutex)
{
    AT_SHIM_RESOLVE(&shim, real_cnd_wait);
    int parked = park(OBJ_CND, cond);
    int result = real_cnd_wait(cond, mutex);
    unpark(parked, OBJ_CND, cond);
    return result;
}

AT_EXPORT int cnd_timedwait(cnd_t *restrict cond, mtx_t *restrict mutex,
                            const struct timespec *restrict abstime)
{
    AT_SHIM_RESOLVE(&shim, real_cnd_timedwait);
    int parked = park(OBJ_CND, cond);
    int result = real_cnd_timedwait(cond, mutex, abstime);
    unpark(parked, OBJ_CND, cond);
    return result;
}

AT_EXPORT int cnd_signal(cnd_t *cond)
{
    AT_SHIM_RESOLVE(&shim, real_cnd_signal);
    wake(OBJ_CND, cond);
    return real_cnd_signal(cond);
}

AT_EXPORT int cnd_broadcast(cnd_t *cond)
{
    AT_SHIM_RESOLVE(&shim, real_cnd_broadcast);
    wake(OBJ_CND, cond);
    return real_cnd_broadcast(cond);
}

/* ---- syscall(SYS_futex, ...): glibc's own futex calls do not come through here, but
 * runtimes that manage their own futex words (GLib, refrt) do ---- */

/* 1 for a futex wait, 2 for a wake, 0 for another operation (requeue, PI locks, wake_op). */
static int futex_role(long op)
{
    switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
        return 1;
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
        return 2;
    default:
        return 0;
    }
}

/* The caller passed as many arguments as its system call takes; forwarding six reads a few
 * that it did not pass, which is what libc's syscall() itself does with registers. */
AT_EXPORT long syscall(long number, ...)
{
    AT_SHIM_RESOLVE(&shim, real_syscall);
    va_list ap;
    va_start(ap, number);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    int role = number == SYS_futex ? futex_role(a2) : 0;
    if (role == 2)
        wake(OBJ_FUTEX, (const void *)a1);
    int parked = role == 1 && park(OBJ_FUTEX, (const void *)a1);
    long result = real_syscall(number, a1, a2, a3, a4, a5, a6);
    unpark(parked, OBJ_FUTEX, (const void *)a1);
    return result;
}
