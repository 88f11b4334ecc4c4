/* A caller that keeps a value in a call-clobbered register across calls to a function it can
 * see does not touch that register: GCC at -O2 (-fipa-ra) keeps main's loop counter in one.
 * rt_schedule is patched (it is declared by the test copy's shim); the wrapper that runs in its
 * place must leave the caller every register the original leaves. Prints how many calls the
 * loop made. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "refrt.h"

static long scheduled;

__attribute__((noinline)) void rt_schedule(rt_actor *actor)
{
    scheduled += actor != NULL;
}

int main(int argc, char **argv)
{
    struct rt_actor_head actor = {.id = 7};
    long calls = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < calls; i++)
        rt_schedule((rt_actor *)&actor);
    printf("{\"ground_truth\":{\"schedule\":%ld}}\n", scheduled);
    return 0;
}
