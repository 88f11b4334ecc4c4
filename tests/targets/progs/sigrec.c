/* Records from signal handlers on the thread they interrupt: the main thread sends to actor 1
 * in a loop while a timer's SIGALRM handler, every INTERVAL_US (20 by default), sends
 * PER_HANDLER messages to actor 2 on the same thread. Every send must be in the trace once, and
 * each actor's in their order. A short interval with many sends per handler makes handlers
 * fill whole blocks while the loop's call is inside the slow path. With "only", the main thread
 * sends nothing: it waits for the handlers' SENDS sends (a handler never starts the recorder).
 * Usage: sigrec SENDS [PER_HANDLER [INTERVAL_US [only]]].
 * Prints {"ground_truth":{"send":N,"handler_send":H}}. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

int nop_send(int actor, int msg);

static volatile sig_atomic_t handler_sends;
static int per_handler = 1;

static void on_alarm(int sig)
{
    (void)sig;
    for (int i = 0; i < per_handler; i++) {
        nop_send(2, handler_sends + 1);
        handler_sends++;
    }
}

int main(int argc, char **argv)
{
    long sends = argc > 1 ? atol(argv[1]) : 2000000;
    per_handler = argc > 2 ? atoi(argv[2]) : 1;
    long interval_us = argc > 3 ? atol(argv[3]) : 20;
    int only = argc > 4 && strcmp(argv[4], "only") == 0;
    if (!only)
        nop_send(1, 0); /* the first event starts the recorder: the handler comes after it */
    struct sigaction act = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigemptyset(&act.sa_mask);
    sigaction(SIGALRM, &act, NULL);
    struct itimerval every = {{0, interval_us}, {0, interval_us}};
    setitimer(ITIMER_REAL, &every, NULL);
    for (long i = 1; !only && i <= sends; i++)
        nop_send(1, (int)i);
    while (only && handler_sends < sends)
        pause();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("{\"ground_truth\":{\"send\":%ld,\"handler_send\":%d}}\n",
           (only ? 0 : sends + 1) + handler_sends, (int)handler_sends);
    return 0;
}
