/* A library that calls rt_park through its PLT, in the plugin it needs (plug.c built with NAME
 * rt_park): for reload.c. */
#include <stdint.h>

void rt_park(const uint64_t *actor);

long call_park(int n)
{
    static const uint64_t actor = 1;
    for (int i = 0; i < n; i++)
        rt_park(&actor);
    return n;
}
