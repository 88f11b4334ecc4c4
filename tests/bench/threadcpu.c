/* libthreadcpu.so: preloaded in front of libactortrace.so by the benchmarks, it measures the
 * CPU time of the tracer's writer thread. It wraps pthread_create so that every new thread
 * runs through `measured`, which, when the thread's own function returns, appends the thread's
 * CPU time in nanoseconds to the file THREADCPU_OUT if the thread is named actortrace-w. The
 * writer returns after it has written the end of the trace, so the figure holds all its work.
 * It records nothing and changes nothing else: the thread runs its own function with its own
 * argument. */
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

static void report(void)
{
    char name[16] = "";
    const char *out = getenv("THREADCPU_OUT");
    struct timespec ts;
    if (!out || prctl(PR_GET_NAME, name) != 0 || strcmp(name, "actortrace-w") != 0 ||
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return;
    FILE *f = fopen(out, "a");
    if (f) {
        fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
        fclose(f);
    }
}

static void *measured(void *arg)
{
    struct start s = *(struct start *)arg;
    free(arg);
    void *result = s.fn(s.arg);
    report();
    return result;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                   void *arg)
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
