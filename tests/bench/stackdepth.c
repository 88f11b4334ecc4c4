/* Times CALLS calls of nop_send made DEPTH frames below main, so that a traced run that
 * captures stacks on sends unwinds at least DEPTH frames per call. Prints ns per call.
 * Usage: stackdepth DEPTH CALLS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int nop_send(int actor, int msg);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double loop(long calls)
{
    volatile int sink = 0;
    for (long i = 0; i < 10000; i++) /* warm up: resolve, first block, the stack's entry */
        sink += nop_send(1, (int)i);
    double start = now_ns();
    for (long i = 0; i < calls; i++)
        sink += nop_send(1, (int)i);
    return (now_ns() - start) / (double)calls;
}

/* noinline and a use of the result after the call: one real frame per level */
__attribute__((noinline)) static double descend(int depth, long calls)
{
    double ns = depth > 1 ? descend(depth - 1, calls) : loop(calls);
    __asm__ volatile("" ::: "memory");
    return ns;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stackdepth DEPTH CALLS\n");
        return 2;
    }
    printf("%.3f\n", descend(atoi(argv[1]), atol(argv[2])));
    return 0;
}
