/* A plugin, built -Bsymbolic-functions with NAME rt_park, whose constructor starts a thread that
 * calls rt_park directly in a loop: the tracer patches rt_park inside the dlopen that loads it,
 * while that thread runs. For spinload.c. */
#include <pthread.h>

static volatile long effects, calls;
static volatile int stop;
static pthread_t spinner;

__attribute__((noinline)) void rt_park(int worker)
{
    effects += worker == 1;
}

static void *spin(void *unused)
{
    (void)unused;
    while (!stop) {
        rt_park(1);
        calls++;
    }
    return NULL;
}

__attribute__((constructor)) static void start(void)
{
    pthread_create(&spinner, NULL, spin, NULL);
}

/* Stops the thread; returns its calls whose effect is missing. */
long stop_spinning(long *total)
{
    stop = 1;
    pthread_join(spinner, NULL);
    *total = calls;
    return calls - effects;
}
