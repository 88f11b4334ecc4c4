/* More live threads than the ring has blocks (512 at the default settings). Two shapes:
 *   many_live barrier THREADS EVENTS: each thread sends EVENTS messages, all meet at a barrier
 *     (holding their partly filled blocks), send EVENTS more, and end.
 *   many_live steady THREADS RATE SECONDS: each thread sends RATE messages a second for
 *     SECONDS, all of them live together.
 * Thread i sends to actor i + 1 with messages numbered from 1, so a test can check each
 * thread's events are all there, once, in order. Prints {"ground_truth":{"send":N}}. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int nop_send(int actor, int msg);

static pthread_barrier_t all_started, all_recorded;
static long events, rate, seconds;

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000, ns % 1000000000};
    nanosleep(&ts, NULL);
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

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int steady = strcmp(argv[1], "steady") == 0;
    long threads = atol(argv[2]);
    events = atol(argv[3]);
    rate = events;
    seconds = argc > 4 ? atol(argv[4]) : 1;
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&all_started, NULL, (unsigned)threads);
    pthread_barrier_init(&all_recorded, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], &attr, steady ? steady_thread : barrier_thread, (void *)i))
            return 1;
    for (long i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    long sends = steady ? threads * rate * seconds : threads * events * 2;
    printf("{\"ground_truth\":{\"send\":%ld}}\n", sends);
    free(t);
    return 0;
}
