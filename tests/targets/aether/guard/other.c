/* A library that is not Aether's runtime but exports two of its function names with other
 * signatures: the Aether shim must see that the rest are missing, say so once and forward the
 * calls untouched. */
#include <stddef.h>

static long total;

void *scheduler_spawn_actor(int core, void (*step)(void *), size_t size)
{
    (void)step;
    total += core + (long)size;
    return &total;
}

void scheduler_send_local(long *counter, long amount)
{
    *counter += amount;
}
