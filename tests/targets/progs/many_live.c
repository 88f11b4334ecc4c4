/* More live threads than the ring has blocks (512 at the default settings). Two shapes:
 *   many_live barrier THREADS EVENTS: each thread sends EVENTS messages, all meet at a barrier
 *     (holding their partly filled blocks), send EVENTS more, and end.
 *   many_live steady THREADS RATE SECONDS: each thread sends RATE messages a second for
 *     SECONDS, all of them live together.
 *   many_live bursts THREADS EVENTS PAUSE_US: each thread sends EVENTS messages in bursts of 1
 *     to 64, pausing up to PAUSE_US between them, while a timer's SIGALRM, every 50 us, makes the
 *     thread it lands on send to actor 1,000,000 + its own actor (so the writer takes blocks
 *     back from threads caught between calls, in calls, and in handlers).
 * Thread i sends to actor i + 1 with messages numbered from 1, so a test can check each
 * thread's events are all there, once, in order. Prints {"ground_truth":{"send":N}}. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

int nop_send(int actor, int msg);

static pthread_barrier_t all_started, all_recorded;
static long events, rate, seconds, pause_us, handler_sends;
static __thread int my_actor, my_handler_msg;

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000, ns % 1000000000};
    while (nanosleep(&ts, &ts) != 0) /* SIGALRM interrupts it */
        ;
}

static void *barrier_thread(void *arg)
{
    int actor = (int)(long)arg + 1, msg = 1;
    for (long i = 0; i < events; i++)
        nop_send(actor, msg++);
    pthread_barrier_wait(&all_recorded);
    for (long i = 0; i < events; i++)
        nop_send(actor, msg++);
    return NULL;
}

static void *steady_thread(void *arg)
{
    int actor = (int)(long)arg + 1;
    pthread_barrier_wait(&all_started);
    for (long i = 1; i <= rate * seconds; i++) {
        nop_send(actor, (int)i);
        sleep_ns(1000000000 / rate);
    }
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    if (my_actor) {
        nop_send(1000000 + my_actor, ++my_handler_msg);
        __atomic_fetch_add(&handler_sends, 1, __ATOMIC_RELAXED); /* a total, read at the end */
    }
}

static void *bursts_thread(void *arg)
{
    unsigned seed = (unsigned)(long)arg;
    int actor = (int)(long)arg + 1, msg = 1;
    pthread_barrier_wait(&all_started);
    while (msg <= events) {
        for (int burst = rand_r(&seed) % 64 + 1; burst > 0 && msg <= events; burst--)
            nop_send(actor, msg++);
        my_actor = actor; /* a handler's event is never its thread's first (that is dropped) */
        sleep_ns(rand_r(&seed) % (pause_us * 1000 + 1));
    }
    my_actor = 0;
    return NULL;
}

static void *(*shape(const char *name))(void *)
{
    if (strcmp(name, "steady") == 0)
        return steady_thread;
    return strcmp(name, "bursts") == 0 ? bursts_thread : barrier_thread;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int steady = strcmp(argv[1], "steady") == 0, bursts = strcmp(argv[1], "bursts") == 0;
    long threads = atol(argv[2]);
    events = atol(argv[3]);
    rate = events;
    seconds = pause_us = argc > 4 ? atol(argv[4]) : 1;
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&all_started, NULL, (unsigned)threads);
    pthread_barrier_init(&all_recorded, NULL, (unsigned)threads);
    if (bursts) {
        struct sigaction act = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
        sigemptyset(&act.sa_mask);
        sigaction(SIGALRM, &act, NULL);
        struct itimerval every = {{0, 50}, {0, 50}};
        setitimer(ITIMER_REAL, &every, NULL);
    }
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], &attr, shape(argv[1]), (void *)i))
            return 1;
    for (long i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    long sends = steady   ? threads * rate * seconds
                 : bursts ? threads * events + handler_sends
                          : threads * events * 2;
    printf("{\"ground_truth\":{\"send\":%ld}}\n", sends);
    free(t);
    return 0;
}
