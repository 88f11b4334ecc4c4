/* A signal handler whose event is the first of its thread (or of the process) interrupts a
 * thread busy in malloc and free: the recorder must not start anything (locks, malloc,
 * threads) inside the handler. A worker allocates and frees for 300 ms while the main thread
 * sends it SIGUSR1 every 100 us; the handler sends to actor 2. Then the worker sends to actor
 * 3 and ends. MODE "thread": the main thread has recorded first (the recorder runs, the worker
 * has not recorded); "process": nothing has been recorded before.
 * Usage: first_in_handler MODE. Prints {"ground_truth":{"send":N}}. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static volatile sig_atomic_t handled;
static volatile int worker_done;

static void on_usr1(int sig)
{
    (void)sig;
    nop_send(2, handled++);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *unused)
{
    (void)unused;
    double end = now_s() + 0.3;
    while (now_s() < end) {
        void *p[16];
        for (int i = 0; i < 16; i++)
            p[i] = malloc(64 + 512 * i);
        for (int i = 0; i < 16; i++)
            free(p[i]);
    }
    nop_send(3, 0);
    worker_done = 1;
    return NULL;
}

int main(int argc, char **argv)
{
    int thread_mode = argc > 1 && strcmp(argv[1], "thread") == 0;
    if (thread_mode)
        nop_send(1, 0);
    signal(SIGUSR1, on_usr1);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (!worker_done) {
        pthread_kill(t, SIGUSR1);
        usleep(100);
    }
    pthread_join(t, NULL);
    printf("{\"ground_truth\":{\"send\":%d}}\n", thread_mode + (int)handled + 1);
    return 0;
}
