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

#include "actortrace.h"
#include "workers.h"

int at__config_glibc(void); /* preload/config.c: ACTORTRACE_GLIBC, read on first use */

static int (*real_pthread_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_pthread_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
                                          const struct timespec *);
static int (*real_pthread_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
                                          const struct timespec *);
static int (*real_pthread_cond_signal)(pthread_cond_t *);
static int (*real_pthread_cond_broadcast)(pthread_cond_t *);
static int (*real_sem_wait)(sem_t *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*real_sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
static int (*real_sem_post)(sem_t *);
static int (*real_cnd_wait)(cnd_t *, mtx_t *);
static int (*real_cnd_timedwait)(cnd_t *, mtx_t *, const struct timespec *);
static int (*real_cnd_signal)(cnd_t *);
static int (*real_cnd_broadcast)(cnd_t *);
static long (*real_syscall)(long, ...);

#define CONDVAR_VERSION "GLIBC_2.3.2"
#define RESOLVE_CONDVAR(real, symbol)                                                              \
    do {                                                                                           \
        if (AT_UNLIKELY((real) == NULL))                                                           \
            *(void **)&(real) = at_resolve_versioned(symbol, CONDVAR_VERSION);                     \
    } while (0)

enum object { OBJ_COND, OBJ_SEM, OBJ_CND, OBJ_FUTEX, OBJ_COUNT };
static const char *const object_names[OBJ_COUNT] = {"cond", "sem", "cnd", "futex"};

static int shim_on = -1;                 /* ACTORTRACE_GLIBC, -1 until read; atomic, relaxed */
static unsigned object_paths[OBJ_COUNT]; /* registered path ids, 0 until first use; relaxed */
static unsigned wake_kind;               /* the registered kind "wake", 0 until first use */
static __thread int in_shim;             /* recording here: a nested wrapper only forwards */

static int enabled(void)
{
    /* relaxed: pairs with the store below only in value: racing threads store the same */
    int on = __atomic_load_n(&shim_on, __ATOMIC_RELAXED);
    if (AT_UNLIKELY(on < 0)) {
        on = at__config_glibc();
        /* relaxed: the same setting whichever thread stores it */
        __atomic_store_n(&shim_on, on, __ATOMIC_RELAXED);
    }
    /* a runtime's wrapper (its park, its receive) already records this wait or wake-up */
    return on && !in_shim && !at_in_wrapper();
}

/* Registration is idempotent, so threads racing here store the same ids. */
static unsigned path_of(enum object object)
{
    /* relaxed: pairs with the store below only in value (registration is idempotent) */
    unsigned path = __atomic_load_n(&object_paths[object], __ATOMIC_RELAXED);
    if (AT_UNLIKELY(path == 0)) {
        path = at_path_register(object_names[object]);
        /* relaxed: the same id whichever thread stores it */
        __atomic_store_n(&object_paths[object], path, __ATOMIC_RELAXED);
    }
    return path;
}

static unsigned wake_event(void)
{
    /* relaxed: pairs with the store below only in value (registration is idempotent) */
    unsigned kind = __atomic_load_n(&wake_kind, __ATOMIC_RELAXED);
    if (AT_UNLIKELY(kind == 0)) {
        kind = at_event_register("wake");
        /* relaxed: the same kind whichever thread stores it */
        __atomic_store_n(&wake_kind, kind, __ATOMIC_RELAXED);
    }
    return kind;
}

enum event { PARK, UNPARK, WAKE };

static void record(enum event event, enum object object, const void *address)
{
    in_shim = 1;
    unsigned kind = event == PARK ? AT_EV_PARK : event == UNPARK ? AT_EV_UNPARK : wake_event();
    at_record(kind, at_current_actor(), (uint64_t)(uintptr_t)address, 0, 0, path_of(object));
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
    RESOLVE_CONDVAR(real_pthread_cond_wait, "pthread_cond_wait");
    int worker = at__worker_park(cond);
    int parked = !worker && park(OBJ_COND, cond);
    int result = real_pthread_cond_wait(cond, mutex);
    if (worker)
        at__worker_unpark(cond);
    unpark(parked, OBJ_COND, cond);
    return result;
}

AT_EXPORT __attribute__((symver("pthread_cond_timedwait@@" CONDVAR_VERSION))) int
at__glibc_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                         const struct timespec *abstime)
{
    RESOLVE_CONDVAR(real_pthread_cond_timedwait, "pthread_cond_timedwait");
    int worker = at__worker_park(cond);
    int parked = !worker && park(OBJ_COND, cond);
    int result = real_pthread_cond_timedwait(cond, mutex, abstime);
    if (worker)
        at__worker_unpark(cond);
    unpark(parked, OBJ_COND, cond);
    return result;
}

AT_EXPORT __attribute__((symver("pthread_cond_signal@@" CONDVAR_VERSION))) int
at__glibc_cond_signal(pthread_cond_t *cond)
{
    RESOLVE_CONDVAR(real_pthread_cond_signal, "pthread_cond_signal");
    at__worker_wake(cond);
    wake(OBJ_COND, cond);
    return real_pthread_cond_signal(cond);
}

AT_EXPORT __attribute__((symver("pthread_cond_broadcast@@" CONDVAR_VERSION))) int
at__glibc_cond_broadcast(pthread_cond_t *cond)
{
    RESOLVE_CONDVAR(real_pthread_cond_broadcast, "pthread_cond_broadcast");
    at__worker_wake(cond);
    wake(OBJ_COND, cond);
    return real_pthread_cond_broadcast(cond);
}

/* Since glibc 2.30; one implementation under GLIBC_2.30 and GLIBC_2.34. */
AT_EXPORT int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                                     clockid_t clock, const struct timespec *abstime)
{
    AT_RESOLVE(real_pthread_cond_clockwait, "pthread_cond_clockwait");
    int parked = park(OBJ_COND, cond);
    int result = real_pthread_cond_clockwait(cond, mutex, clock, abstime);
    unpark(parked, OBJ_COND, cond);
    return result;
}

/* ---- POSIX semaphores: each call to a waiting function is a park, whether or not the count
 * let it through at once ---- */

AT_EXPORT int sem_wait(sem_t *sem)
{
    AT_RESOLVE(real_sem_wait, "sem_wait");
    int parked = park(OBJ_SEM, sem);
    int result = real_sem_wait(sem);
    unpark(parked, OBJ_SEM, sem);
    return result;
}

AT_EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
    AT_RESOLVE(real_sem_timedwait, "sem_timedwait");
    int parked = park(OBJ_SEM, sem);
    int result = real_sem_timedwait(sem, abstime);
    unpark(parked, OBJ_SEM, sem);
    return result;
}

AT_EXPORT int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abstime)
{
    AT_RESOLVE(real_sem_clockwait, "sem_clockwait");
    int parked = park(OBJ_SEM, sem);
    int result = real_sem_clockwait(sem, clock, abstime);
    unpark(parked, OBJ_SEM, sem);
    return result;
}

AT_EXPORT int sem_post(sem_t *sem)
{
    AT_RESOLVE(real_sem_post, "sem_post");
    wake(OBJ_SEM, sem);
    return real_sem_post(sem);
}

/* ---- C11 threads: cnd_* call glibc's condvar code directly, not pthread_cond_* ---- */

AT_EXPORT int cnd_wait(cnd_t *cond, mtx_t *mutex)
{
    AT_RESOLVE(real_cnd_wait, "cnd_wait");
    int parked = park(OBJ_CND, cond);
    int result = real_cnd_wait(cond, mutex);
    unpark(parked, OBJ_CND, cond);
    return result;
}

AT_EXPORT int cnd_timedwait(cnd_t *restrict cond, mtx_t *restrict mutex,
                            const struct timespec *restrict abstime)
{
    AT_RESOLVE(real_cnd_timedwait, "cnd_timedwait");
    int parked = park(OBJ_CND, cond);
    int result = real_cnd_timedwait(cond, mutex, abstime);
    unpark(parked, OBJ_CND, cond);
    return result;
}

AT_EXPORT int cnd_signal(cnd_t *cond)
{
    AT_RESOLVE(real_cnd_signal, "cnd_signal");
    wake(OBJ_CND, cond);
    return real_cnd_signal(cond);
}

AT_EXPORT int cnd_broadcast(cnd_t *cond)
{
    AT_RESOLVE(real_cnd_broadcast, "cnd_broadcast");
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
    AT_RESOLVE(real_syscall, "syscall");
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
