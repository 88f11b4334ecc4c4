/* Signal handlers on threads that come and go: THREADS threads, WAVE at a time, each sending
 * SENDS messages to actor 1 and ending, while a SIGALRM every 100 us (delivered to whichever
 * thread runs: often one that has not recorded yet, or is ending) sends to actor 2 from its
 * handler, and main forks a child that ends at once every 20 ms.
 * Usage: handler_churn THREADS WAVE SENDS. Prints {"ground_truth":{"send":N,"handler_send":H}}. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static long handler_sends; /* atomic */
static int sends;

static void on_alarm(int sig)
{
    (void)sig;
    nop_send(2, (int)__atomic_add_fetch(&handler_sends, 1, __ATOMIC_RELAXED));
}

static void *sender(void *unused)
{
    (void)unused;
    for (int i = 0; i < sends; i++)
        nop_send(1, i);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fork_now_and_then(double *next_fork)
{
    if (now_s() < *next_fork)
        return;
    *next_fork = now_s() + 0.02;
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    if (child > 0)
        waitpid(child, NULL, 0);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 300;
    int wave = argc > 2 ? atoi(argv[2]) : 30;
    sends = argc > 3 ? atoi(argv[3]) : 10;
    nop_send(3, 0); /* the recorder runs before the first handler */
    struct sigaction act = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigemptyset(&act.sa_mask);
    sigaction(SIGALRM, &act, NULL);
    struct itimerval every = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &every, NULL);
    pthread_t *ids = calloc((size_t)wave, sizeof *ids);
    double next_fork = 0;
    for (int done = 0; done < threads; done += wave) {
        for (int i = 0; i < wave; i++)
            if (pthread_create(&ids[i], NULL, sender, NULL) != 0)
                return 2;
        fork_now_and_then(&next_fork);
        for (int i = 0; i < wave; i++)
            pthread_join(ids[i], NULL);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    long handled = __atomic_load_n(&handler_sends, __ATOMIC_RELAXED);
    printf("{\"ground_truth\":{\"send\":%ld,\"handler_send\":%ld}}\n",
           1 + (long)(threads / wave * wave) * sends + handled, handled);
    return 0;
}
