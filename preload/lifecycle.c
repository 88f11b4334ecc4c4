/* Starting and stopping the recorder. The first event starts it: reads the settings, opens the
 * trace file, creates the block ring and starts the writer. A process that never records an
 * event (the shell or launcher in front of the traced program) so leaves no file behind. The
 * destructor, which runs after the program's atexit handlers, from whichever thread called
 * exit, drains everything into the file. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"

int at__state;
pthread_key_t at__exit_key;
static char trace_path[4096];

void at__warn(const char *fmt, ...)
{
    char line[1024] = "actortrace: ";
    size_t prefix = strlen(line);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + prefix, sizeof line - prefix - 1, fmt, ap);
    va_end(ap);
    size_t len = prefix + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
}

uint64_t at__clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int at_enabled(void)
{
    return __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_RUNNING;
}

/* ACTORTRACE_OUT with %p replaced by the pid and %% by %. */
static int expand_pattern(const char *pattern, char *out, size_t cap)
{
    size_t len = 0;
    for (const char *p = pattern; *p; p++) {
        char pid[16];
        const char *piece = p;
        size_t piece_len = 1;
        if (p[0] == '%' && p[1] == 'p') {
            piece_len = (size_t)snprintf(pid, sizeof pid, "%d", (int)getpid());
            piece = pid;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++;
        }
        if (len + piece_len >= cap)
            return -ENAMETOOLONG;
        memcpy(out + len, piece, piece_len);
        len += piece_len;
    }
    out[len] = '\0';
    return 0;
}

static int open_trace(void)
{
    int err = expand_pattern(at__config.out_pattern, trace_path, sizeof trace_path);
    if (err < 0)
        return err;
    /* never follow a link or reuse a file: a trace is always a new file of ours */
    int fd = open(trace_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

static void fork_prepare(void)
{
    at__meta_lock();
}

static void fork_parent(void)
{
    at__meta_unlock();
}

static void fork_child(void)
{
    at__meta_unlock();
    at__fork_child();
}

static int start(void)
{
    at__config_load();
    int fd = open_trace();
    if (fd < 0) {
        at__warn("cannot create trace file %s (%s); not tracing", trace_path, strerror(-fd));
        return fd;
    }
    int err = at__ring_create(trace_path);
    if (err == 0)
        err = -pthread_key_create(&at__exit_key, at__thread_exit);
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
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    return 0;
}

/* The thread running start(): its own events meanwhile are dropped, not waited for. */
static __thread int starting_here;

/* The first thread to get here starts the recorder; others that record meanwhile wait for it
 * (a few milliseconds, once), so that no event of the program's start is lost. */
int at__ensure_started(void)
{
    int expected = AT_STATE_UNINIT;
    if (__atomic_compare_exchange_n(&at__state, &expected, AT_STATE_STARTING, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        starting_here = 1;
        int state = start() == 0 ? AT_STATE_RUNNING : AT_STATE_OFF;
        starting_here = 0;
        __atomic_store_n(&at__state, state, __ATOMIC_RELEASE);
        at__futex((uint32_t *)&at__state, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
        return state;
    }
    int state;
    while ((state = __atomic_load_n(&at__state, __ATOMIC_ACQUIRE)) == AT_STATE_STARTING &&
           !starting_here)
        at__futex((uint32_t *)&at__state, FUTEX_WAIT_PRIVATE, AT_STATE_STARTING, NULL);
    return state;
}

__attribute__((destructor)) static void at_destructor(void)
{
    int expected = AT_STATE_RUNNING;
    if (!__atomic_compare_exchange_n(&at__state, &expected, AT_STATE_OFF, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    at__writer_stop();
    at__ring_remove();
}
