/* A library built -Bsymbolic-functions, so patched at start: spin() calls rt_schedule, which
 * it defines, directly, until *stop. Its constructor starts a thread that does the same before
 * the tracer's constructor patches it, until spin_early_stop(). For dlrace.c. */
#include <pthread.h>
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

static volatile int early_stop;
static pthread_t early;
static long early_calls;

static void *run_early(void *unused)
{
    (void)unused;
    early_calls = spin(&early_stop);
    return NULL;
}

__attribute__((constructor)) static void start_early(void)
{
    pthread_create(&early, NULL, run_early, NULL);
}

long spin_early_stop(void)
{
    early_stop = 1;
    pthread_join(early, NULL);
    return early_calls;
}
