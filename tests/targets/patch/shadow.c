/* The shadow stack behind patched entries (docs/PATCHING.md, "Registers"): rt_step recursing
 * through its own patched entry DEPTH deep, and rt_schedule left by a longjmp out of the
 * original (below the wrapper) JUMPS times, each leaving a stale frame that must be discarded,
 * not kept until the stack is full. Every call is recorded; after them, a loop of ordinary calls
 * keeps its counter in a call-clobbered register (-fipa-ra), which must come back intact.
 * Usage: shadow DEPTH JUMPS. Prints the calls made. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "refrt.h"

#define LEAVE 99 /* the actor id whose schedule longjmps out */

static jmp_buf out;
static long steps, schedules;

__attribute__((noinline)) int rt_step(rt_actor *actor, rt_msg *msg)
{
    steps++;
    if (msg->payload == 0)
        return 0;
    rt_msg next = *msg;
    next.payload--;
    return 1 + rt_step(actor, &next);
}

__attribute__((noinline)) void rt_schedule(rt_actor *actor)
{
    schedules++;
    if (((struct rt_actor_head *)actor)->id == LEAVE)
        longjmp(out, 1);
}

int main(int argc, char **argv)
{
    struct rt_actor_head actor = {.id = 1}, leaving = {.id = LEAVE};
    long depth = argc > 2 ? atol(argv[1]) : 300, jumps = argc > 2 ? atol(argv[2]) : 3000;
    rt_msg msg = {.id = 1, .type = 1, .payload = depth};
    int reached = rt_step((rt_actor *)&actor, &msg);
    for (volatile long i = 0; i < jumps; i++)
        if (setjmp(out) == 0)
            rt_schedule((rt_actor *)&leaving);
    for (long i = 0; i < 1000; i++)
        rt_schedule((rt_actor *)&actor);
    printf("depth %d\n", reached);
    printf("{\"ground_truth\":{\"step\":%ld,\"schedule\":%ld}}\n", steps, schedules);
    return reached == depth ? 0 : 1;
}
