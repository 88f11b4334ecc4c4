/* A watchdog that jumps out of sends: a timer's SIGALRM handler, every INTERVAL_US, siglongjmps
 * back to the loop, out of whatever send (and recording call) it interrupted. Phase 1 sends to
 * actor 1 for TIMED sends under the timer; phase 2, the timer off, sends AFTER messages to actor
 * 2, which must all be recorded. A send cut short by the jump may or may not have been recorded:
 * the ground truth gives the sends that returned and those cut short.
 * Usage: jump_watchdog TIMED AFTER [INTERVAL_US].
 * Prints {"ground_truth":{"send_returned":N,"send_cut":J,"after":A}}. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

int nop_send(int actor, int msg);

static sigjmp_buf loop_env;
static volatile sig_atomic_t in_send;

static void on_alarm(int sig)
{
    (void)sig;
    if (in_send)
        siglongjmp(loop_env, 1);
}

int main(int argc, char **argv)
{
    long timed = argc > 1 ? atol(argv[1]) : 1000000;
    long after = argc > 2 ? atol(argv[2]) : 100000;
    long interval_us = argc > 3 ? atol(argv[3]) : 20;
    nop_send(3, 0); /* the first event starts the recorder */
    struct sigaction act = {.sa_handler = on_alarm};
    sigemptyset(&act.sa_mask);
    sigaction(SIGALRM, &act, NULL);
    struct itimerval every = {{0, interval_us}, {0, interval_us}};
    setitimer(ITIMER_REAL, &every, NULL);
    static volatile long returned, cut, i;
    if (sigsetjmp(loop_env, 1)) {
        in_send = 0;
        cut++;
    }
    while (i < timed) {
        long msg = i++;
        in_send = 1;
        nop_send(1, (int)msg);
        in_send = 0;
        returned++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    for (long j = 0; j < after; j++)
        nop_send(2, (int)j);
    printf("{\"ground_truth\":{\"send_returned\":%ld,\"send_cut\":%ld,\"after\":%ld}}\n",
           returned + 1, cut, after);
    return 0;
}
