/* Fatal signals. A signal whose default action ends the process would end it before the
 * writer has written what the threads committed, so while tracing, the recorder's handler sits
 * in front of the default action: it asks the writer to finish the trace and waits a few
 * seconds at most (at__writer_stop only sets a flag, wakes the writer and waits: the thread
 * that faulted may hold any lock, malloc's included), puts the default action back and lets
 * the signal end the process as it would have: a fault returns to the faulting instruction,
 * which faults again; a sent signal is raised again. The status the parent sees is the same.
 * What the writer could not write by then stays in the ring file, for recovery.
 *
 * The default action ends every thread at once; the trace takes milliseconds to finish, and
 * meanwhile the program's other threads would run on, print and record (thousands of events
 * after the signal). So the thread that takes the signal first stops the others: it sends
 * each the same signal (tgkill), and in our handler a thread that finds another finishing
 * blocks every signal and waits there for the process to end. What they had committed is
 * written, their blocks as they are. A thread that blocks the signal is not stopped.
 *
 * The program's own handlers are kept: sigaction() and signal() are wrapped, so the program
 * sees and sets its own dispositions while the kernel's stays ours, and our handler calls the
 * program's when it has one (with the flags and mask it asked for). Every handler the program
 * installs, for any signal, runs behind ours, which marks the thread as in a handler: the
 * recorder then does nothing there that is not async-signal-safe. SIG_IGN is passed to the
 * kernel as it is. In overwrite mode, SIGUSR2 asks for the blocks in memory to be written; left
 * at its default action it never ends the program, not even while the trace finishes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "config.h"
#include "lifecycle.h"
#include "jumps.h"
#include "signals.h"
#include "stacks.h"
#include "writer.h"

#define DUMP_SIGNAL SIGUSR2

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

/* Signals whose default action ends the process (SIGKILL and SIGSTOP cannot be caught). */
static const int fatal[] = {SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT,
                            SIGBUS,  SIGFPE,  SIGUSR1,   SIGSEGV, SIGUSR2, SIGPIPE,
                            SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM,
                            SIGPROF, SIGIO,   SIGPWR,    SIGSYS};

static struct sigaction program[NSIG]; /* the dispositions as the program set them */
static uint8_t watched[NSIG];          /* ours is in front for this signal; written once, release */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* orders changes of `program` */

static int is_function(const struct sigaction *act)
{
    return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

/* Never inlined, alone in its section: a captured stack ends at its frame (stacks.c). */
__attribute__((noinline, noclone, section(AT_SIGNAL_CALL_SECTION))) static void
call_program(const struct sigaction *act, int sig, siginfo_t *info, void *context)
{
    if (act->sa_flags & SA_SIGINFO)
        act->sa_sigaction(sig, info, context);
    else
        act->sa_handler(sig);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

static void die_as_default(int sig, const siginfo_t *info)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    real_sigaction(sig, &dfl, NULL);
    /* A fault the kernel raised (si_code > 0) happens again when we return; a signal that was
     * sent is sent again, and arrives when this handler returns and unblocks it. So are a trap
     * (a breakpoint's int3 is behind the instruction when we return, and nothing traps again)
     * and a SIGSYS (the system call it stands for was skipped). */
    int fault =
        (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info->si_code > 0;
    if (!fault)
        raise(sig);
}

/* The thread that ends the process for a fatal signal at its default action; 0 = none. The
 * first to set it (compare-exchange) finishes the trace; the others stop. */
static pid_t ending;

/* Sends sig to every thread of the process but this one. Async-signal-safe: the directory is
 * read with getdents64 into the stack. The writer blocks every signal, so it runs on. */
static void signal_other_threads(int sig)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char buf[4096];
    pid_t self = gettid();
    for (ssize_t n; fd >= 0 && (n = getdents64(fd, buf, sizeof buf)) > 0;)
        for (ssize_t at = 0; at < n; at += ((struct dirent64 *)(buf + at))->d_reclen) {
            pid_t tid = 0;
            for (const char *c = ((struct dirent64 *)(buf + at))->d_name; *c >= '0' && *c <= '9';)
                tid = tid * 10 + *c++ - '0';
            if (tid > 0 && tid != self)
                tgkill(at__pid, tid, sig);
        }
    if (fd >= 0)
        close(fd);
}

/* Where a thread that another's fatal signal stops waits for the end of the process: no
 * handler of the program runs here any more. */
static void stop_here(void)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    for (;;)
        pause();
}

/* A fatal signal at its default action: the first thread here stops the others (twice, for a
 * thread created meanwhile), finishes the trace and dies of the signal; a thread that comes
 * later stops, unless it is that one (a fault while finishing). A vfork child (another pid)
 * and the recorder's own threads die at once. */
static void end_as_default(int sig, const siginfo_t *info)
{
    pid_t first = 0, self = gettid();
    if (!at__thread.internal && getpid() == at__pid) {
        /* relaxed: nothing is published with it; a thread that loses only stops */
        if (__atomic_compare_exchange_n(&ending, &first, self, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            signal_other_threads(sig);
            signal_other_threads(sig);
            at__finish(AT_FINISH_DEADLINE_NS);
        } else if (first != self) {
            stop_here();
        }
    }
    die_as_default(sig, info);
}

static int is_fatal(int sig)
{
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        if (fatal[i] == sig)
            return 1;
    return 0;
}

/* A handler running on this thread, for a jump that leaves it (jumps.c): what the thread's
 * counts go back to then. The jump lands in the code the handler interrupted, outside any
 * recording call or stack capture (none has a jump target inside), so the recording calls in
 * progress are those of the handlers around it: as many as when the handler around it began. */
struct handler_frame {
    struct at_frame frame;
    struct handler_frame *outer_handler;
    uint32_t in_signal;                    /* before this handler */
    uint32_t nest, spare_busy, stack_busy; /* at this handler's start */
};
static __thread struct handler_frame *innermost_handler;

static void handler_left(struct at_frame *frame)
{
    struct handler_frame *h = (struct handler_frame *)frame;
    struct handler_frame *around = h->outer_handler;
    innermost_handler = around;
    at__thread.in_signal = h->in_signal;
    at__self.nest = around ? around->nest : 0;
    at__thread.spare_busy = around ? around->spare_busy : 0;
    at__stack_set_busy(around ? around->stack_busy : 0);
}

/* The frame lies on the alternate signal stack when the kernel put the handler there. Its
 * counts are filled in before it is pushed: a handler that interrupts this one may jump out of
 * both. */
static void handler_enter(struct handler_frame *h, const ucontext_t *uc)
{
    h->outer_handler = innermost_handler;
    h->in_signal = at__thread.in_signal;
    h->nest = at__self.nest;
    h->spare_busy = at__thread.spare_busy;
    h->stack_busy = at__stack_busy();
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* a handler that interrupts sees h whole */
    innermost_handler = h;
    at_frame_push(&h->frame, handler_left);
    uintptr_t lo = (uintptr_t)uc->uc_stack.ss_sp, size = uc->uc_stack.ss_size;
    if (!(uc->uc_stack.ss_flags & SS_DISABLE) && (uintptr_t)h - lo < size) {
        h->frame.stack_lo = lo;
        h->frame.stack_hi = lo + size;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    at__thread.in_signal++;
}

static void handler_leave(struct handler_frame *h)
{
    at__thread.in_signal--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    innermost_handler = h->outer_handler;
    at_frame_pop(&h->frame);
}

static int install(int sig);

/* In front of every handler the program installs, and of the fatal signals' default action.
 * in_signal tells the recorder that this thread runs a handler (record.c). */
static void on_signal(int sig, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    struct handler_frame frame;
    handler_enter(&frame, context);
    if (sig == DUMP_SIGNAL && at__config.mode == AT_MODE_OVERWRITE) {
        if (at_enabled())
            at__writer_request_dump();
        if (is_function(&program[sig]))
            call_program(&program[sig], sig, info, context);
    } else if (is_function(&program[sig])) {
        struct sigaction act = program[sig];
        /* SA_RESETHAND, as the kernel does it: the default from the handler's start (a signal
         * it raises gets the default action; what it installs stays) */
        if (act.sa_flags & SA_RESETHAND) {
            program[sig] = (struct sigaction){.sa_handler = SIG_DFL};
            install(sig);
        }
        call_program(&act, sig, info, context);
    } else if (program[sig].sa_handler == SIG_DFL) {
        end_as_default(sig, info);
    }
    handler_leave(&frame);
    errno = saved_errno;
}

/* Puts the kernel's disposition for sig in line with program[sig]. */
static int install(int sig)
{
    const struct sigaction *act = &program[sig];
    if (act->sa_handler == SIG_IGN || (act->sa_handler == SIG_DFL && !is_fatal(sig)))
        return real_sigaction(sig, act, NULL);
    struct sigaction ours = {.sa_sigaction = on_signal};
    ours.sa_mask = act->sa_mask;
    ours.sa_flags = (act->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    return real_sigaction(sig, &ours, NULL);
}

static void resolve(void)
{
    AT_RESOLVE(real_sigaction, "sigaction");
    at__jumps_resolve(); /* before a handler may jump */
}

/* Puts ours in front for sig, keeping the program's disposition; under `lock`. */
static void watch_locked(int sig)
{
    if (watched[sig] || real_sigaction(sig, NULL, &program[sig]) < 0)
        return;
    if (install(sig) == 0)
        /* release: pairs with the acquire in sigaction(), which then reads program[sig] */
        __atomic_store_n(&watched[sig], 1, __ATOMIC_RELEASE);
}

void at__signals_install(void)
{
    resolve();
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        watch_locked(fatal[i]);
    pthread_mutex_unlock(&lock);
}

/* The first handler the program installs for a signal puts ours in front of it, whether or
 * not tracing has started, so that the recorder knows when it runs in a handler. */
AT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    resolve();
    int handler = act && is_function(act) && sig != SIGKILL && sig != SIGSTOP;
    if (sig <= 0 || sig >= NSIG ||
        /* acquire: pairs with watch_locked's release store, after program[sig] is read */
        (!handler && !__atomic_load_n(&watched[sig], __ATOMIC_ACQUIRE)))
        return real_sigaction(sig, act, old);
    pthread_mutex_lock(&lock);
    watch_locked(sig);
    if (!watched[sig]) {
        pthread_mutex_unlock(&lock);
        return real_sigaction(sig, act, old);
    }
    if (old)
        *old = program[sig];
    int err = 0;
    if (act) {
        program[sig] = *act;
        err = install(sig);
    }
    pthread_mutex_unlock(&lock);
    return err;
}

/* glibc's signal() calls its internal sigaction directly, so it is wrapped too, with its BSD
 * semantics (SA_RESTART, the signal blocked in its handler). */
AT_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act = {.sa_handler = handler, .sa_flags = SA_RESTART}, old;
    sigemptyset(&act.sa_mask);
    if (sigaction(sig, &act, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}
