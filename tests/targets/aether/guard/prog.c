/* Calls the look-alike functions of other.c and prints what they computed. */
#include <stdio.h>

void *scheduler_spawn_actor(int core, void (*step)(void *), size_t size);
void scheduler_send_local(long *counter, long amount);

int main(void)
{
    long *total = scheduler_spawn_actor(2, NULL, 40);
    for (long i = 1; i <= 100; i++)
        scheduler_send_local(total, i);
    printf("total %ld\n", *total);
    return *total == 42 + 5050 ? 0 : 1;
}
