/* Short-lived threads, then a long run on the main thread: for overwrite mode, whose pool must
 * not fill with the partly filled blocks the ended threads leave. WAVES threads, one after
 * another, each send SENDS messages (nop_send to actor 1); then the main thread sends FINAL
 * (to actor 2), and every EVERY of them (0: never) starts a thread that sends SENDS more.
 * Usage: overwrite_churn WAVES SENDS FINAL EVERY. Prints the ground truth. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int nop_send(int actor, int msg);

static int sends;

static void *short_lived(void *unused)
{
    (void)unused;
    for (int i = 1; i <= sends; i++)
        nop_send(1, i);
    return NULL;
}

static void one_thread(void)
{
    pthread_t t;
    pthread_create(&t, NULL, short_lived, NULL);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    int waves = atoi(argv[1]), final = atoi(argv[3]), every = atoi(argv[4]);
    sends = atoi(argv[2]);
    for (int w = 0; w < waves; w++)
        one_thread();
    long threads = waves;
    for (int i = 1; i <= final; i++) {
        nop_send(2, i);
        if (every > 0 && i % every == 0) {
            one_thread();
            threads++;
        }
    }
    printf("{\"ground_truth\":{\"short_send\":%ld,\"final_send\":%d}}\n", threads * sends, final);
    return 0;
}
