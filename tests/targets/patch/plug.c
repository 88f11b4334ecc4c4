/* A plugin for dlrace.c, built once per NAME (rt_park, rt_unpark, rt_exit: a function the test
 * copy's shim declares) with -Bsymbolic-functions: call_plugin() calls NAME directly, so the
 * tracer patches NAME when dlopen loads the plugin. NAME is given an actor, whose first word is
 * its id, as rt_exit's wrapper reads it (rt_park's takes the pointer's low bits for a worker). */
#include <stdint.h>

static volatile long calls;

__attribute__((noinline)) void NAME(const uint64_t *actor)
{
    calls += actor != 0;
}

long call_plugin(int n)
{
    static const uint64_t actor = 1;
    for (int i = 0; i < n; i++)
        NAME(&actor);
    return calls;
}
