/* libthreadcpu.so: preloaded in front of libactortrace.so by the benchmarks, it measures the
 * CPU time of the tracer's writer thread. It wraps pthread_create so that every new thread
 * runs through `measured`, which, when the thread's own function returns, appends the thread's
 * CPU time in nanoseconds to the file THREADCPU_OUT if the thread is named actortrace-w. The
 * writer is detached and may still be returning when the process ends, after it has written
 * the end of the trace: then this library's destructor, which runs after the tracer's, reads
 * the writer's CPU time from /proc instead. One figure either way. It records nothing and
 * changes nothing else: the thread runs its own function with its own argument. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

struct start {
    void *(*fn)(void *);
    void *arg;
};

static int reported; /* the figure is written once, by the writer or the destructor; atomic */

static void write_figure(long long ns)
{
    const char *out = getenv("THREADCPU_OUT");
    if (!out || __atomic_exchange_n(&reported, 1, __ATOMIC_ACQ_REL))
        return;
    FILE *f = fopen(out, "a");
    if (f) {
        fprintf(f, "%lld\n", ns);
        fclose(f);
    }
}

static void report(void)
{
    char name[16] = "";
    struct timespec ts;
    if (prctl(PR_GET_NAME, name) == 0 && strcmp(name, "actortrace-w") == 0 &&
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        write_figure((long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/* The first number of /proc/self/task/TID/schedstat: the thread's time on a CPU, in ns. */
static long long task_cpu_ns(const char *tid)
{
    char path[300], comm[32] = "";
    long long ns = -1;
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int named = fgets(comm, sizeof comm, f) && strcmp(comm, "actortrace-w\n") == 0;
    fclose(f);
    snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", tid);
    if (named && (f = fopen(path, "r"))) {
        if (fscanf(f, "%lld", &ns) != 1)
            ns = -1;
        fclose(f);
    }
    return ns;
}

__attribute__((destructor)) static void report_unreturned_writer(void)
{
    DIR *tasks = opendir("/proc/self/task");
    struct dirent *d;
    while (tasks && (d = readdir(tasks))) {
        long long ns = d->d_name[0] != '.' ? task_cpu_ns(d->d_name) : -1;
        if (ns >= 0)
            write_figure(ns);
    }
    if (tasks)
        closedir(tasks);
}

static void *measured(void *arg)
{
    struct start s = *(struct start *)arg;
    free(arg);
    void *result = s.fn(s.arg);
    report();
    return result;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                      void *);
    if (!real_pthread_create)
        real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                       void *))dlsym(RTLD_NEXT, "pthread_create");
    struct start *s = malloc(sizeof *s);
    if (!s)
        return real_pthread_create(thread, attr, fn, arg);
    *s = (struct start){fn, arg};
    int err = real_pthread_create(thread, attr, measured, s);
    if (err)
        free(s);
    return err;
}
