/* Starting and stopping the recorder. The first event starts it: reads the settings, opens the
 * trace file, creates the block ring, starts the writer and takes over the fatal signals. A
 * process that never records an event (the shell or launcher in front of the traced program)
 * so leaves no file behind. at__finish stops it: every committed event goes into the file,
 * then the end record. It runs from the destructor (after the program's atexit handlers, from
 * whichever thread called exit), and from _exit, exec and fatal signals (process.c,
 * signals.c). A forked child starts a recorder of its own; a _Fork child records nothing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "at_vectors.h"
#include "config.h"
#include "lifecycle.h"
#include "meta.h"
#include "patch.h"
#include "record.h"
#include "ring.h"
#include "signals.h"
#include "stackroom.h"
#include "stacks.h"
#include "takeback.h"
#include "tracefile.h"
#include "writer.h"

pid_t at__pid;
static char trace_path[4096];
static int forked_child; /* this image began as the child of a traced process's fork */

/* The thread finishing the trace (its tid), FINISHED once it has, 0 before: a futex word. Only
 * one thread finishes; another that comes meanwhile (exit() on two threads at once, whose
 * second ends the process by glibc's own _exit; _exit or a fatal signal racing exit()) waits
 * for the finish before it lets the process end, or the process ends in the middle of it and
 * the trace has no end and the ring file stays. */
#define FINISHED UINT32_MAX
static uint32_t finisher;

AT_GENERAL_REGS_ONLY int at_enabled(void) /* called from wrappers: no vector register */
{
    /* acquire: pairs with the release store of RUNNING in at__ensure_started */
    return __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
}

static void fork_prepare(void)
{
    at__meta_lock();
}

static void fork_parent(void)
{
    at__meta_unlock();
}

/* The child of a fork: one thread, a copy of the parent's memory, and none of its threads. The
 * blocks and the trace file are the parent's, which its writer still owns; the child lets go of
 * them and starts a recorder of its own, with its own file, at its first event. */
static void fork_child(void)
{
    at__pid = getpid();
    __atomic_store_n(&at__threads_total, 0, __ATOMIC_RELAXED); /* the parent's threads */
    at__meta_unlock();
    at__record_after_fork();
    at__ring_after_fork();
    at__writer_after_fork();
    at__meta_after_fork();
    forked_child = 1;
    finisher = 0; /* the parent's finish, if it had begun, is the parent's */
    /* release: the child's resets above happen before its first event sees UNINIT (one thread) */
    __atomic_store_n(&at__state, AT_STATE_UNINIT, __ATOMIC_RELEASE);
}

/* glibc's _Fork: a fork that runs no atfork handler, for a child that may only call
 * async-signal-safe functions (malloc's locks are as the parent's threads left them). The child
 * lets go of its parent's buffer and trace with stores and system calls only, and records
 * nothing: a recorder of its own would need malloc. (It would otherwise take itself for a
 * vfork child, and record into its parent's blocks, which the file shares.) */
static pid_t (*real__Fork)(void);

AT_EXPORT pid_t _Fork(void)
{
    AT_RESOLVE(real__Fork, "_Fork");
    if (!real__Fork)
        return -1;
    pid_t pid = real__Fork();
    if (pid == 0) {
        at__pid = getpid();
        /* relaxed: one thread; no event of this process starts anything */
        __atomic_store_n(&at__state, AT_STATE_OFF, __ATOMIC_RELAXED);
        finisher = FINISHED; /* nothing to finish: the parent's writer is the parent's */
        at__record_after_fork();
        at__ring_after_fork();
    }
    return pid;
}

/* Once per process image: what survives a fork (settings, the thread-exit key, the fork
 * handlers, the signal handlers). */
static int first_start(void)
{
    static int done;
    if (done)
        return 0;
    at__config_load();
    AT_RETURN_IF_ERROR(at__record_init());
    AT_RETURN_IF_ERROR(-pthread_atfork(fork_prepare, fork_parent, fork_child));
    done = 1;
    return 0;
}

/* start() with every signal blocked on this thread, until its result is published; returns
 * the state it published. SIGXFSZ: the ring file and the trace's first bytes may go past
 * RLIMIT_FSIZE, and then the calls must fail with EFBIG (and tracing be off, or the ring be
 * anonymous memory) rather than the signal end the program; a SIGXFSZ raised meanwhile is
 * taken off this thread before it is unblocked. The others: a fatal signal handled here in the
 * middle of start() would find half a recorder to finish; on any other thread, the handler
 * waits for the result (at__finish), and may have stopped this one, whose handler then runs
 * once the result is out (signals.c). */
static int start_guarded(int (*start_fn)(void))
{
    sigset_t all, xfsz, old;
    sigfillset(&all);
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int state = start_fn() == 0 ? AT_STATE_RUNNING : AT_STATE_OFF;
    struct timespec none = {0, 0};
    while (sigtimedwait(&xfsz, NULL, &none) == SIGXFSZ)
        ;
    /* release: pairs with every acquire load of at__state: the ring and writer are made */
    __atomic_store_n(&at__state, state, __ATOMIC_RELEASE);
    at__futex((uint32_t *)&at__state, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return state;
}

static int start(void)
{
    int err = first_start();
    if (err < 0) {
        at__warn("cannot start (%s); not tracing", strerror(-err));
        return err;
    }
    at__pid = getpid(); /* a child forked before the first event has its parent's */
    /* before any file exists: a fatal signal from now on finishes the trace (or waits for
     * start() to, see at__finish) instead of leaving an empty trace and a ring file */
    at__signals_install();
    int fd = at__trace_create(trace_path, sizeof trace_path, forked_child);
    if (fd < 0) {
        at__warn("cannot create trace file %s (%s); not tracing", trace_path, strerror(-fd));
        return fd;
    }
    err = at__ring_create(trace_path);
    if (err == 0) {
        at__meta_process(at__ring.path);
        at__meta_clock();
        err = at__writer_start(fd, trace_path);
    }
    if (err < 0) {
        at__warn("cannot start recording into %s (%s); not tracing", trace_path, strerror(-err));
        at__ring_remove();
        close(fd);
        unlink(trace_path);
        return err;
    }
    return 0;
}

/* The slow path's entry (at_record.h): the recorder is started here at the first event, never
 * in a signal handler (start-up allocates and takes locks); record.c does the rest. */
static void record_slow(unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg, uint32_t name,
                        unsigned path)
{
    if (at__record_skips())
        return;
    int saved_errno = errno;
    /* acquire: pairs with the release store of RUNNING in start_guarded, after the ring is
     * made */
    int state = __atomic_load_n(&at__state, __ATOMIC_ACQUIRE);
    if (AT_UNLIKELY(state != AT_STATE_RUNNING) && !at__thread.in_signal)
        state = at__ensure_started();
    at__record_event(state, kind, actor, peer, msg, name, path);
    errno = saved_errno;
}

AT_GENERAL_REGS_ONLY void at__record_slow(unsigned kind, uint64_t actor, uint64_t peer,
                                          uint64_t msg, uint32_t name, unsigned path)
{
    AT_VECTORS_KEPT(record_slow(kind, actor, peer, msg, name, path));
}

/* The thread running start(): its own events meanwhile are dropped, not waited for. */
static __thread int starting_here;

/* Whether this thread has the stack the start needs: a thread with less leaves it to a later
 * event (its events meanwhile are dropped and counted), rather than fault in the middle. */
static int room_to_start(void)
{
    at__stack_room_learn();
    return at__stack_room() >= AT_START_STACK;
}

/* The first thread to get here starts the recorder; others that record meanwhile wait for it
 * (a few milliseconds, once), so that no event of the program's start is lost. */
int at__ensure_started(void)
{
    /* acquire: as the loads below. Once the recorder is stopped every event of a thread still
     * running comes here, and a compare-exchange on at__state each, from every such thread,
     * made them fight over its cache line: a load decides. */
    int state = __atomic_load_n(&at__state, __ATOMIC_ACQUIRE);
    if (state == AT_STATE_OFF || state == AT_STATE_RUNNING ||
        (state == AT_STATE_UNINIT && !room_to_start()))
        return state;
    int expected = AT_STATE_UNINIT;
    /* acq_rel: one thread wins the start; pairs with at__finish's CAS from UNINIT to OFF */
    if (__atomic_compare_exchange_n(&at__state, &expected, AT_STATE_STARTING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        starting_here = 1;
        /* start() makes calls that are cancellation points (opening the file, starting the
         * writer); a cancellation acted on in there would leave the state STARTING for good,
         * and every thread that records waiting for it */
        int cancel;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
        int state = start_guarded(start);
        pthread_setcancelstate(cancel, NULL);
        starting_here = 0;
        return state;
    }
    /* acquire: pairs with the release store of the start's result above */
    while ((state = __atomic_load_n(&at__state, __ATOMIC_ACQUIRE)) == AT_STATE_STARTING &&
           !starting_here)
        at__futex((uint32_t *)&at__state, FUTEX_WAIT_PRIVATE, AT_STATE_STARTING, NULL);
    return state;
}

/* A start under way on another thread is waited for (5 s at most): then exit() or a fatal
 * signal finishes what it made, rather than the process ending in the middle of it. */
static void wait_started(void)
{
    struct timespec step = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 500 && !starting_here &&
                    /* acquire: pairs with at__ensure_started's release store of the result */
                    __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_STARTING;
         i++)
        at__futex((uint32_t *)&at__state, FUTEX_WAIT_PRIVATE, AT_STATE_STARTING, &step);
}

/* Waits up to timeout_ns for the thread finishing the trace, or for the writer to have written
 * the end (then removes the ring file, if that thread has not, since a thread stopped by a
 * fatal signal on another will not). Polled every millisecond for the writer. */
static void wait_finished(uint64_t timeout_ns)
{
    uint64_t deadline =
        timeout_ns == AT_WAIT_FOREVER ? UINT64_MAX : at__clock_ns(CLOCK_MONOTONIC) + timeout_ns;
    for (;;) {
        /* acquire: pairs with at__finish's release store of FINISHED */
        uint32_t now_finishing = __atomic_load_n(&finisher, __ATOMIC_ACQUIRE);
        if (now_finishing == FINISHED)
            return;
        if (at__writer_finished()) {
            at__ring_remove();
            return;
        }
        if (at__clock_ns(CLOCK_MONOTONIC) >= deadline)
            return;
        struct timespec ms = {0, 1000 * 1000};
        at__futex(&finisher, FUTEX_WAIT_PRIVATE, now_finishing, &ms);
    }
}

int at__finish(uint64_t timeout_ns)
{
    if (getpid() != at__pid) /* a vfork child shares our memory: hands off */
        return -ECHILD;
    /* Events were dropped and nothing started the recorder (only signal handlers recorded, or
     * threads short of stack): it starts now, so that a trace counts them rather than none
     * being written. */
    if (!at__thread.in_signal && at__ring_lost_total() &&
        /* acquire: pairs with at__ensure_started's release stores */
        __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_UNINIT)
        at__ensure_started();
    int expected = AT_STATE_UNINIT;
    /* the process ends before its first event: no start may begin now, on any thread
     * (acq_rel: pairs with at__ensure_started's CAS from UNINIT) */
    if (__atomic_compare_exchange_n(&at__state, &expected, AT_STATE_OFF, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return -EALREADY;
    wait_started();
    uint32_t self = (uint32_t)gettid(), first = 0;
    /* relaxed: the state's CAS below orders what the finish does */
    if (!__atomic_compare_exchange_n(&finisher, &first, self, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
        if (first != self) /* else a signal handler interrupted this thread's own finish */
            wait_finished(timeout_ns);
        return -EALREADY;
    }
    int err = -EALREADY;
    expected = AT_STATE_RUNNING;
    /* acq_rel: pairs with the slow path's acquire loads, which then stop */
    if (__atomic_compare_exchange_n(&at__state, &expected, AT_STATE_OFF, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        at__takeback_note_drops(); /* before the writer's last pass, which writes them */
        err = at__writer_stop(timeout_ns);
        if (err == 0)
            at__ring_remove(); /* everything is in the trace: nothing to recover */
    }
    /* release: pairs with wait_finished's acquire load */
    __atomic_store_n(&finisher, FINISHED, __ATOMIC_RELEASE);
    at__futex(&finisher, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
    return err;
}

/* The library's one constructor, so that what runs at load runs in this order, whatever the
 * order of the files in the link: the pid of this process image first (at__finish compares it
 * with its caller's, and a fatal signal may come at any time); then patching the objects
 * loaded so far (patch.c); then the call-stack settings (stacks.c), whose dlopen of libunwind
 * goes through the library's own dlopen wrapper (patch_dlopen.c), so that libunwind and what
 * it loads are scanned for functions to patch as every object loaded later is. */
__attribute__((constructor)) static void at_constructor(void)
{
    at__pid = getpid();
    at__process_init();
    at__patch_init();
    at__stacks_init();
}

/* Runs after the program's atexit handlers, from the thread that called exit(), while other
 * threads may still be recording. */
__attribute__((destructor)) static void at_destructor(void)
{
    at__finish(AT_WAIT_FOREVER);
}
