/* Two declared names at one address: rt_unpark is an alias of rt_park. The code is patched
 * once, so each call is recorded once (as the one name it was patched under). Prints the calls
 * made. */
#include <stdio.h>

static long calls;

__attribute__((noinline)) void rt_park(int worker)
{
    calls += worker >= 0;
}
void rt_unpark(int worker) __attribute__((alias("rt_park")));

int main(void)
{
    for (int i = 0; i < 5; i++) {
        rt_park(i);
        rt_unpark(i);
    }
    printf("{\"ground_truth\":{\"park_or_unpark\":%ld}}\n", calls);
    return 0;
}
