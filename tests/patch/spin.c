/* A library built -Bsymbolic-functions, so patched at start: spin() calls rt_schedule, which
 * it defines, directly, until *stop. For dlrace.c. */
#include <stdint.h>

struct rt_actor_head {
    uint64_t id;
};

static volatile long scheduled;

__attribute__((noinline)) void rt_schedule(struct rt_actor_head *actor)
{
    scheduled += actor != 0;
}

long spin(const volatile int *stop)
{
    struct rt_actor_head actor = {.id = 1};
    long calls = 0;
    while (!*stop) {
        rt_schedule(&actor);
        calls++;
    }
    return calls;
}
