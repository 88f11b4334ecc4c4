/* The ways a process image ends that skip the destructor: _exit and _Exit, exec, quick_exit,
 * and exit() on a thread while another runs the exit handlers. Before
 * each, the trace is finished, so that every event committed so far is in the file with its
 * end record; the wait for the writer has a deadline, since _exit is often called from a
 * signal handler that interrupted a thread holding a lock (what is not written by then stays
 * in the ring file). exec keeps LD_PRELOAD, so the new image is traced into a file of its own
 * (tracefile.c). If exec fails, the program goes on untraced: its threads may still hold
 * blocks of the finished trace, which nothing would write.
 *
 * A vfork child runs on its parent's memory until it execs or exits; at__finish sees that the
 * pid is not the recorder's and leaves everything alone. A vfork child that calls exit() (a
 * mistake that works untraced) would run the exit handlers in the parent's memory, using them
 * up, and the parent's trace would never be finished: here it leaves with _exit instead, after
 * flushing stdio as exit would. fork is handled by pthread_atfork
 * (lifecycle.c); posix_spawn and system exec without passing through these wrappers, which is
 * what they should do: the parent's recorder is not theirs to finish. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lifecycle.h"

static void (*real_exit)(int);
static void (*real__exit)(int);
static void (*real__Exit)(int);
static void (*real_quick_exit)(int);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);

/* Calls of exit and quick_exit so far in this process image. glibc runs the exit handlers,
 * among them the destructor that finishes the trace, on the first caller only; a later one,
 * on another thread while the first runs them, goes straight to glibc's own _exit, which no
 * wrapper sees. So a later caller finishes the trace first, as _exit does (or waits for the
 * thread finishing it), and what the first one's handlers record after that is dropped. */
static uint32_t exits;

static void before_exit(void)
{
    /* relaxed: at__finish orders the finish itself; a vfork child's count would be its
     * parent's */
    if (getpid() == at__pid && __atomic_fetch_add(&exits, 1, __ATOMIC_RELAXED) > 0)
        at__finish(AT_FINISH_DEADLINE_NS);
}

AT_EXPORT void exit(int status)
{
    AT_RESOLVE(real_exit, "exit");
    AT_RESOLVE(real__exit, "_exit");
    /* running, yet not the recorder's pid: a vfork child (a forked child's state is reset) */
    if (at_enabled() && getpid() != at__pid) {
        fflush(NULL);
        real__exit(status);
    }
    before_exit();
    real_exit(status);
    __builtin_unreachable();
}

/* quick_exit runs the at_quick_exit handlers, then glibc's own _exit: the trace is finished by
 * the handler registered at load (at__process_init), which runs after the program's. */
AT_EXPORT void quick_exit(int status)
{
    AT_RESOLVE(real_quick_exit, "quick_exit");
    before_exit();
    real_quick_exit(status);
    __builtin_unreachable();
}

static void finish_at_quick_exit(void)
{
    at__finish(AT_FINISH_DEADLINE_NS);
}

void at__process_init(void)
{
    at_quick_exit(finish_at_quick_exit);
}

AT_EXPORT void _exit(int status)
{
    AT_RESOLVE(real__exit, "_exit");
    at__finish(AT_FINISH_DEADLINE_NS);
    real__exit(status);
    __builtin_unreachable();
}

AT_EXPORT void _Exit(int status)
{
    AT_RESOLVE(real__Exit, "_Exit");
    at__finish(AT_FINISH_DEADLINE_NS);
    real__Exit(status);
    __builtin_unreachable();
}

/* 1 between finishing the trace for an exec and the exec failing. */
static int finished_for_exec;

static void before_exec(void)
{
    int saved_errno = errno;
    finished_for_exec = at__finish(AT_FINISH_DEADLINE_NS) == 0;
    errno = saved_errno;
}

/* exec returned, so it failed: say that the trace ended there. */
static int exec_failed(int result)
{
    int saved_errno = errno;
    if (finished_for_exec)
        at__warn("exec failed (%s); the trace ended before it and the program goes on untraced",
                 strerror(saved_errno));
    finished_for_exec = 0;
    errno = saved_errno;
    return result;
}

AT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    AT_RESOLVE(real_execve, "execve");
    before_exec();
    return exec_failed(real_execve(path, argv, envp));
}

AT_EXPORT int execv(const char *path, char *const argv[])
{
    AT_RESOLVE(real_execv, "execv");
    before_exec();
    return exec_failed(real_execv(path, argv));
}

AT_EXPORT int execvp(const char *file, char *const argv[])
{
    AT_RESOLVE(real_execvp, "execvp");
    before_exec();
    return exec_failed(real_execvp(file, argv));
}

AT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    AT_RESOLVE(real_execvpe, "execvpe");
    before_exec();
    return exec_failed(real_execvpe(file, argv, envp));
}

AT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    AT_RESOLVE(real_fexecve, "fexecve");
    before_exec();
    return exec_failed(real_fexecve(fd, argv, envp));
}

/* The execl family take their arguments as a list ending in NULL (execle's environment comes
 * after it): the list goes into an array on the stack, then to the matching exec above. */
enum exec_kind { EXEC_PATH, EXEC_SEARCH, EXEC_ENV };

static int exec_list(enum exec_kind kind, const char *path, const char *arg0, va_list ap)
{
    va_list counting;
    va_copy(counting, ap);
    size_t count = 1;
    while (va_arg(counting, const char *))
        count++;
    va_end(counting);
    char *argv[count + 1];
    argv[0] = (char *)arg0;
    for (size_t i = 1; i <= count; i++)
        argv[i] = va_arg(ap, char *); /* the last is the NULL */
    if (kind == EXEC_ENV)
        return execve(path, argv, va_arg(ap, char *const *));
    return kind == EXEC_SEARCH ? execvp(path, argv) : execv(path, argv);
}

AT_EXPORT int execl(const char *path, const char *arg0, ...)
{
    va_list ap;
    va_start(ap, arg0);
    int result = exec_list(EXEC_PATH, path, arg0, ap);
    va_end(ap);
    return result;
}

AT_EXPORT int execlp(const char *file, const char *arg0, ...)
{
    va_list ap;
    va_start(ap, arg0);
    int result = exec_list(EXEC_SEARCH, file, arg0, ap);
    va_end(ap);
    return result;
}

AT_EXPORT int execle(const char *path, const char *arg0, ...)
{
    va_list ap;
    va_start(ap, arg0);
    int result = exec_list(EXEC_ENV, path, arg0, ap);
    va_end(ap);
    return result;
}
