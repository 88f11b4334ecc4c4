/* A SIGALRM handler wakes a thread with sem_post (async-signal-safe, the usual way), every
 * 200 us, while the main thread allocates and frees without pause, so that the handler often
 * interrupts malloc. For the glibc shim (ACTORTRACE_GLIBC=1):
 *   first  the handler's sem_post is the first call of the shim in the process
 *   after  the main thread posts once before the timer starts
 * A second thread, there from the start (so that malloc takes its arena's lock), takes the
 * posts with sem_trywait, which the shim does not wrap. Runs MS milliseconds; prints the
 * handler's calls ("ticks") and the main thread's posts. Usage: handler_wake first|after MS */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static sem_t wakeups;
static volatile sig_atomic_t ticks, stop;

static void on_alarm(int sig)
{
    (void)sig;
    if (!stop) {
        sem_post(&wakeups);
        ticks++;
    }
}

static void *taker(void *unused)
{
    (void)unused;
    while (!stop)
        if (sem_trywait(&wakeups) != 0)
            nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "first") != 0 && strcmp(argv[1], "after") != 0)) {
        fprintf(stderr, "usage: handler_wake first|after MS\n");
        return 2;
    }
    int posts = strcmp(argv[1], "after") == 0;
    double ms = atof(argv[2]);
    sem_init(&wakeups, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, taker, NULL);
    if (posts)
        sem_post(&wakeups);
    struct sigaction act = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigemptyset(&act.sa_mask);
    sigaction(SIGALRM, &act, NULL);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &every, NULL);
    for (double end = now_ms() + ms; now_ms() < end;)
        for (int i = 0; i < 1000; i++) /* above the thread cache: the arena's lock */
            free(malloc(5000 + (size_t)(i & 63)));
    setitimer(ITIMER_REAL, &(struct itimerval){{0, 0}, {0, 0}}, NULL);
    stop = 1;
    sem_post(&wakeups);
    posts++;
    pthread_join(t, NULL);
    printf("{\"ground_truth\":{\"ticks\":%d,\"posts\":%d}}\n", (int)ticks, posts);
    return 0;
}
