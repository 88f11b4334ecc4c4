/* Sends to actor 1 (nop_send) at a steady pace the writer keeps up with: BURST sends, then a
 * 1 ms sleep, until SENDS sends are made; then prints {"ground_truth":{"send":SENDS}} and waits
 * for a signal to end it.
 * Usage: paced BURST SENDS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int nop_send(int actor, int msg);

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long burst = atol(argv[1]), sends = atol(argv[2]);
    if (sends < 1 || burst < 1)
        return 2;
    const struct timespec pause_ms = {0, 1000 * 1000};
    for (long i = 1; i <= sends; i++) {
        nop_send(1, (int)i);
        if (i % burst == 0)
            nanosleep(&pause_ms, NULL);
    }
    printf("{\"ground_truth\":{\"send\":%ld}}\n", sends);
    fflush(stdout);
    for (;;)
        pause();
}
