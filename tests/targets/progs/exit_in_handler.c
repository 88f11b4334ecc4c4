/* Calls exit() from an actor's handler on a worker thread while the other worker and the main
 * thread keep running. The runtime's counts are printed by an atexit handler, which runs before
 * the tracer's final flush: the trace must hold at least that many events of each kind.
 * Usage: exit_in_handler MESSAGES */
#include <stdio.h>
#include <stdlib.h>

#include "refrt.h"

static long limit;

static int sink(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self, (void)msg, (void)state;
    return RT_CONTINUE;
}

static int stopper(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self, (void)state;
    if (msg->payload == limit)
        exit(0);
    return RT_CONTINUE;
}

int main(int argc, char **argv)
{
    limit = argc > 1 ? atol(argv[1]) : 10000;
    if (limit < 1 || rt_init(2) < 0)
        return 2;
    uint32_t work = rt_msg_type("WORK");
    atexit(rt_print_ground_truth);
    rt_actor *busy = rt_spawn("sink", sink, NULL);
    rt_actor *last = rt_spawn("stopper", stopper, NULL);
    for (long i = 0; i <= limit; i++) {
        rt_tell(busy, work, i);
        rt_tell(busy, work, i);
        rt_tell(last, work, i);
    }
    for (;;)
        rt_tell(busy, work, -1); /* keep sending until the stopper's exit ends the process */
}
