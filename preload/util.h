/* preload/'s lowest layer (util.c): warnings, the clock, the recorder's state, futex waits, and
 * each thread's private recorder state. Every file of preload/ may include it; it includes
 * only installed headers. The layers, each using only those below it (preload/README.md):
 * util < config < ring < losses < meta < takeback < writer < record < lifecycle. */
#ifndef AT_PRELOAD_UTIL_H
#define AT_PRELOAD_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "actortrace.h"

#define AT_RETURN_IF_ERROR(expr)                                                                   \
    do {                                                                                           \
        int at_err_ = (expr);                                                                      \
        if (at_err_ < 0)                                                                           \
            return at_err_;                                                                        \
    } while (0)

/* ---- the recorder's state ---- */

enum at_state {
    AT_STATE_UNINIT = 0,   /* no event yet (in this process: a forked child starts here) */
    AT_STATE_STARTING = 1, /* one thread is starting it; others that record wait */
    AT_STATE_RUNNING = 2,
    AT_STATE_OFF = 3, /* not tracing: failed to start, or stopped */
};

/* enum at_state; written with release by lifecycle.c, read with acquire anywhere. */
extern int at__state;

#define AT_WAIT_FOREVER UINT64_MAX

/* ---- each thread's private state ---- */

/* What the recorder keeps per thread beside struct at_thread (at_record.h), which holds only
 * what the inline hot path of a separately built shim reads. Owner: the thread itself (and its
 * signal handlers). The writer reads `held`, `tid` and, once tracing is off, the drops of a
 * registered thread (takeback.c), and clears `held` when it takes the block back. */
struct at_thread_state {
    struct at_thread *pub; /* the thread's at__self, for the writer: set by the slow path
                            * (record.c) before the thread joins the registry */
    uint32_t in_signal;    /* signal handlers running on this thread (signals.c) */
    uint32_t internal;     /* the recorder's own thread: its events are never recorded */
    void *spare;           /* struct at_ring_block a nested call records into, or NULL */
    uint32_t spare_next;   /* next slot of the spare; taken with an unlocked xadd */
    uint32_t spare_busy;   /* calls between taking a slot of the spare and committing it */
    uint32_t tid;          /* gettid(), cached by the slow path */
    uint32_t exit_hook;    /* the thread-exit key is set for this thread */
    void *block;           /* struct at_ring_block of the current slots, owned by the slow
                            * path */
    uint64_t drop_count;   /* events dropped and not yet in a LOST record; taken by the finish
                            * once tracing is off (takeback.c) */
    uint64_t drop_first_tsc;
    char name[16];          /* the thread name last written to the trace */
    uint64_t held;          /* the current block's ticket (takeback.c), 0 = none; cleared by
                             * the thread's exchange or the writer's compare-exchange */
    uint32_t registry_slot; /* index + 1 in takeback.c's registry, 0 = not in it; under its
                             * mutex */
    uint32_t exiting;       /* the thread-exit destructor has run: the thread stays out of the
                             * registry, which a later round of destructors might not leave */
};

/* initial-exec, as at__self: one %fs-relative access. */
extern __thread struct at_thread_state at__thread __attribute__((tls_model("initial-exec")));

/* ---- warnings, the clock, waits ---- */

/* One line on stderr, prefixed "actortrace: ". No stdio stream, no allocation. */
void at__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t at__clock_ns(clockid_t clock);
/* The CLOCK_MONOTONIC time timeout_ns from now, for pthread_mutex_clocklock. */
static inline struct timespec at__monotonic_after(uint64_t timeout_ns)
{
    uint64_t at = at__clock_ns(CLOCK_MONOTONIC) + timeout_ns;
    return (struct timespec){(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
}

/* futex(2) by the syscall instruction itself: the recorder's own waits must not pass through
 * libc's syscall(), which a shim may wrap. Returns the kernel's result (negative errno). */
static inline long at__futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    long ret;
    register long r10 __asm__("r10") = (long)timeout;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(202L /* SYS_futex on x86-64 */), "D"(word), "S"((long)op),
                       "d"((long)value), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
}

/* The test copies' delays, limits and values (AT_TEST_HOOKS). at__test_delay sleeps the
 * milliseconds that the environment variable `name` gives, if any; at__test_wait_change waits
 * as long at most for *word to differ from `value` (holding one side of a race until the other
 * has moved); at__test_limit_ns is the milliseconds it gives, in ns, or `ns` when it gives
 * none; at__test_lattice sets *lattice to the clock lattice it gives, "PERIOD" (a step; 1:
 * none) or "PERIOD:R0,R1,...", and leaves it as it is when it gives none. The product has none
 * of them. */
struct at_tsc_lattice;
#ifdef AT_TEST_HOOKS
void at__test_delay(const char *name);
void at__test_wait_change(const char *name, const uint32_t *word, uint32_t value);
uint64_t at__test_limit_ns(const char *name, uint64_t ns);
void at__test_lattice(const char *name, struct at_tsc_lattice *lattice);
#else
static inline void at__test_delay(const char *name)
{
    (void)name;
}
static inline void at__test_wait_change(const char *name, const uint32_t *word, uint32_t value)
{
    (void)name, (void)word, (void)value;
}
static inline uint64_t at__test_limit_ns(const char *name, uint64_t ns)
{
    (void)name;
    return ns;
}
static inline void at__test_lattice(const char *name, struct at_tsc_lattice *lattice)
{
    (void)name, (void)lattice;
}
#endif

/* Whether descriptor fd is open on the file (dev, ino): a descriptor the program may have closed
 * and its number reused for a file of its own. */
int at__fd_is(int fd, dev_t dev, ino_t ino);

/* A copy of descriptor fd out of the way of the program's own, high up (open() hands out the
 * lowest free number), close-on-exec; fd itself when there is none. A program that closes the
 * descriptors it did not open and opens files of its own then gets other numbers than ours. */
int at__high_fd(int fd);

/* The process's start time in clock ticks after boot (field 22 of /proc/self/stat): it tells
 * this process from another with the same pid. 0 when unknown. */
uint64_t at__start_ticks(void);

#endif
