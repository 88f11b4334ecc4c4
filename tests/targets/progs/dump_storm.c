/* Overwrite mode's dump signal arriving at any moment, the end of the process included: a
 * thread sends SIGUSR2 to the process every 20 us while the main thread records SENDS sends
 * and returns from main. The program leaves SIGUSR2 at its default action, which in overwrite
 * mode means "write the buffer": it must exit with status 0.
 * Usage: dump_storm SENDS. Prints {"ground_truth":{"send":SENDS}}. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static void *dumper(void *unused)
{
    (void)unused;
    for (;;) {
        kill(getpid(), SIGUSR2);
        usleep(20);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long sends = argc > 1 ? atol(argv[1]) : 100000;
    nop_send(1, 0); /* the first event starts the recorder, which takes SIGUSR2 over */
    pthread_t t;
    pthread_create(&t, NULL, dumper, NULL);
    for (long i = 1; i < sends; i++)
        nop_send(1, (int)i);
    printf("{\"ground_truth\":{\"send\":%ld}}\n", sends);
    return 0;
}
