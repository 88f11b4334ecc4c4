/* CZMQ ping-pong between the main thread and a zactor (zstr_send / zstr_recv), for
 * tests/bench/run.sh to run untraced and traced: over the actor's pipe, or with `tcp` over a
 * PAIR socket pair on 127.0.0.1, an ordinary socket whose messages the tracer fingerprints.
 * After WARMUP untimed round trips (the tracer starts at the first event), times ROUNDS more and
 * prints two figures: round trips per second, and the CPU time of the whole process (every
 * thread: the tracer's writer too) per round trip in nanoseconds, which other work on a busy
 * machine skews less.
 * Usage: czmq_pingpong ROUNDS [WARMUP [tcp]]   (WARMUP defaults to ROUNDS) */
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

/* Over tcp: binds a PAIR, tells main its endpoint once started, echoes until "END", then waits for
 * $TERM. */
void tcp_echo_actor(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_t *pair = zsock_new_pair("@tcp://127.0.0.1:*");
    char *endpoint = zsock_last_endpoint(pair);
    zsock_signal(pipe, 0); /* zactor_new returns */
    zstr_send(pipe, endpoint);
    free(endpoint);
    for (char *ping; (ping = zstr_recv(pair)) && strcmp(ping, "END") != 0; free(ping))
        zstr_send(pair, "PONG");
    free(zstr_recv(pipe));
    zsock_destroy(&pair);
}

static int rounds(void *peer, long n)
{
    for (long i = 0; i < n; i++) {
        zstr_send(peer, "PING");
        char *pong = zstr_recv(peer);
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
    bool tcp = argc > 3 && strcmp(argv[3], "tcp") == 0;
    if (n < 1 || warmup < 1 || argc > 4 || (argc > 3 && !tcp)) {
        fprintf(stderr, "usage: czmq_pingpong ROUNDS [WARMUP [tcp]]\n");
        return 2;
    }
    zactor_t *actor = zactor_new(tcp ? tcp_echo_actor : echo_actor, NULL);
    char *endpoint = tcp ? zstr_recv(actor) : NULL;
    zsock_t *pair = endpoint ? zsock_new_pair(NULL) : NULL;
    if (tcp && (!pair || zsock_connect(pair, "%s", endpoint) != 0))
        return 1;
    free(endpoint);
    void *peer = tcp ? (void *)pair : (void *)actor;
    if (rounds(peer, warmup) != 0)
        return 1;
    double start = now(), cpu_start = cpu_seconds();
    if (rounds(peer, n) != 0)
        return 1;
    double elapsed = now() - start, cpu = cpu_seconds() - cpu_start;
    if (pair)
        zstr_send(pair, "END");
    zactor_destroy(&actor);
    zsock_destroy(&pair);
    printf("%.0f %.0f\n", (double)n / elapsed, cpu / (double)n * 1e9);
    return 0;
}
