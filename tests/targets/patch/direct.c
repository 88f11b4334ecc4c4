/* Entries patched without the stub (docs/PATCHING.md, "Direct entries"): a function that makes
 * a call no compiler sees into clobbers, as far as its callers know, every call-clobbered
 * register, so its entry may go to the wrapper directly. rt_send calls through a pointer;
 * rt_schedule calls a function of this program that calls getpid through the PLT (found one
 * call deep); rt_park calls nothing, so it keeps the stub. Prints the calls each made. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "refrt.h"

static long sent, scheduled, parked;
static rt_actor *volatile last_to;

static void count_send(void)
{
    sent++;
}

static void (*volatile on_send)(void) = count_send;

__attribute__((noinline)) void rt_send(rt_actor *to, rt_msg *msg)
{
    (void)msg;
    on_send();
    last_to = to; /* after the call: not a tail call */
}

__attribute__((noinline)) static void note_schedule(void)
{
    scheduled += getpid() > 0;
}

__attribute__((noinline)) void rt_schedule(rt_actor *actor)
{
    if (actor)
        note_schedule();
}

__attribute__((noinline)) void rt_park(int worker)
{
    parked += worker >= 0;
}

int main(int argc, char **argv)
{
    struct rt_actor_head actor = {.id = 7};
    long calls = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < calls; i++) {
        rt_send((rt_actor *)&actor, NULL);
        rt_schedule((rt_actor *)&actor);
        rt_park(0);
    }
    printf("{\"ground_truth\":{\"send\":%ld,\"schedule\":%ld,\"park\":%ld}}\n", sent, scheduled,
           parked);
    return 0;
}
