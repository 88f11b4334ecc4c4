/* Steps long enough to be preempted: ACTORS actors on 2 refrt workers each handle STEPS
 * messages, spinning MS milliseconds of CPU in every handler. Run on one core (taskset -c 0),
 * the two workers' steps overlap in time on that core, and each is cut by the scheduler.
 * Usage: long_steps [ACTORS STEPS MS] (default 4 10 3) */
#include "refrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint32_t work_type;
static long steps, spin_ms;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int spinner(rt_actor *self, rt_msg *msg, void *state)
{
    long *handled = state;
    (void)self, (void)msg;
    long long until = now_ns() + spin_ms * 1000000LL;
    while (now_ns() < until)
        ;
    return ++*handled == steps ? RT_STOP : RT_CONTINUE;
}

int main(int argc, char **argv)
{
    long actors = argc > 1 ? atol(argv[1]) : 4;
    steps = argc > 2 ? atol(argv[2]) : 10;
    spin_ms = argc > 3 ? atol(argv[3]) : 3;
    if (actors < 1 || actors > 64 || steps < 1 || spin_ms < 0 || rt_init(2) != 0) {
        fprintf(stderr, "usage: long_steps [ACTORS STEPS MS] (ACTORS 1..64)\n");
        return 2;
    }
    work_type = rt_msg_type("WORK");
    long handled[64] = {0};
    rt_actor *a[64];
    char name[32];
    for (long i = 0; i < actors; i++) {
        snprintf(name, sizeof name, "spin-%ld", i + 1);
        a[i] = rt_spawn(name, spinner, &handled[i]);
    }
    for (long s = 0; s < steps; s++)
        for (long i = 0; i < actors; i++)
            rt_tell(a[i], work_type, s);
    rt_wait();
    rt_shutdown();
    rt_print_ground_truth();
    return 0;
}
