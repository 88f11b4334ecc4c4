/* Sends MESSAGES messages to an actor that stops after the last, then ends as told: with exit
 * status STATUS, or killed by signal N when given as -N. For the tests of actortrace record,
 * which passes on the exit status of the program it traces.
 * Usage: ends MESSAGES STATUS|-SIGNAL */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "refrt.h"

static long messages;

static int counter(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self, (void)state;
    return msg->payload >= messages ? RT_STOP : RT_CONTINUE;
}

int main(int argc, char **argv)
{
    messages = argc == 3 ? atol(argv[1]) : 0;
    if (messages < 1 || rt_init(1) < 0) {
        fprintf(stderr, "usage: ends MESSAGES STATUS|-SIGNAL\n");
        return 2;
    }
    uint32_t type = rt_msg_type("COUNT");
    rt_actor *actor = rt_spawn("counter", counter, NULL);
    for (long i = 1; i <= messages; i++)
        rt_tell(actor, type, i);
    rt_wait();
    rt_shutdown();
    rt_print_ground_truth();
    fflush(stdout);
    int end = atoi(argv[2]);
    if (end < 0) {
        signal(-end, SIG_DFL); /* whatever it inherited: this run ends of that signal */
        raise(-end);
    }
    return end;
}
