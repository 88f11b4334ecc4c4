/* Ends the process from several threads at once, or with quick_exit: THREADS threads each send
 * SENDS messages (nop_send to actor thread + 1), then, as HOW says:
 *   exit_all   every thread calls exit(0) as soon as all have sent (a barrier)
 *   exit_mixed the same, but the odd threads call _exit(0)
 *   quick      the main thread joins them and calls quick_exit(0), whose handler, registered
 *              with at_quick_exit, sends once more (to actor THREADS + 1)
 * Prints the ground truth first: the sends that must be in the trace.
 * Usage: exit_race THREADS SENDS HOW */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static int threads, sends;
static const char *how;
static pthread_barrier_t all_sent;

static void *sender(void *arg)
{
    int id = (int)(long)arg;
    for (int i = 1; i <= sends; i++)
        nop_send(id + 1, i);
    if (strcmp(how, "quick") == 0)
        return NULL;
    pthread_barrier_wait(&all_sent);
    if (strcmp(how, "exit_mixed") == 0 && id % 2)
        _exit(0);
    exit(0);
}

static void last_send(void)
{
    nop_send(threads + 1, 1);
}

int main(int argc, char **argv)
{
    threads = argc == 4 ? atoi(argv[1]) : 0;
    sends = argc == 4 ? atoi(argv[2]) : 0;
    how = argc == 4 ? argv[3] : "";
    int quick = strcmp(how, "quick") == 0;
    if (threads < 1 || threads > 64 || sends < 1 ||
        (!quick && strcmp(how, "exit_all") != 0 && strcmp(how, "exit_mixed") != 0)) {
        fprintf(stderr, "usage: exit_race THREADS SENDS exit_all|exit_mixed|quick\n");
        return 2;
    }
    printf("{\"ground_truth\":{\"send\":%d}}\n", threads * sends + quick);
    fflush(stdout);
    pthread_barrier_init(&all_sent, NULL, (unsigned)threads);
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, sender, (void *)(long)i);
    if (!quick)
        for (;;)
            pause(); /* a sender's exit ends the process */
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    at_quick_exit(last_send);
    quick_exit(0);
}
