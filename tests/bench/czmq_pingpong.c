/* CZMQ ping-pong between the main thread and a zactor over its pipe (zstr_send / zstr_recv),
 * for tests/bench/run.sh to run untraced and traced. After WARMUP untimed round trips (the
 * tracer starts at the first event), times ROUNDS more and prints two figures: round trips per
 * second, and the CPU time of the whole process (every thread: the tracer's writer too) per
 * round trip in nanoseconds, which other work on a busy machine skews less.
 * Usage: czmq_pingpong ROUNDS [WARMUP]   (WARMUP defaults to ROUNDS) */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

void echo_actor(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_signal(pipe, 0);
    for (char *ping; (ping = zstr_recv(pipe)) && strcmp(ping, "$TERM") != 0; free(ping))
        zstr_send(pipe, "PONG");
}

static int rounds(zactor_t *actor, long n)
{
    for (long i = 0; i < n; i++) {
        zstr_send(actor, "PING");
        char *pong = zstr_recv(actor);
        if (!pong)
            return -1;
        free(pong);
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 0;
    long warmup = argc > 2 ? atol(argv[2]) : n;
    if (n < 1 || warmup < 1 || argc > 3) {
        fprintf(stderr, "usage: czmq_pingpong ROUNDS [WARMUP]\n");
        return 2;
    }
    zactor_t *actor = zactor_new(echo_actor, NULL);
    if (rounds(actor, warmup) != 0)
        return 1;
    double start = now(), cpu_start = cpu_seconds();
    if (rounds(actor, n) != 0)
        return 1;
    double elapsed = now() - start, cpu = cpu_seconds() - cpu_start;
    zactor_destroy(&actor);
    printf("%.0f %.0f\n", (double)n / elapsed, cpu / (double)n * 1e9);
    return 0;
}
