/* Times CALLS calls of nop_send through the PLT and prints the mean nanoseconds per call. Run
 * with and without the tracer preloaded; the difference is the cost of recording one event.
 * With --floor it times instead what no recorder can beat on this machine: rdtsc and a 16-byte
 * store into a thread-local buffer per iteration. With --threads N, N threads make CALLS calls
 * each at once (no warm-up), and the figure is the wall time per call of all of them: what a
 * many-threaded program recording as fast as it can asks of the writer.
 * Usage: hotpath [--floor] CALLS | hotpath --threads N CALLS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int nop_send(int actor, int msg);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __thread struct {
    uint64_t tsc, value;
} floor_buffer[4096] __attribute__((tls_model("initial-exec")));

/* The buffer is never read, so the compiler would delete the stores (and did: the figure was
 * rdtsc alone). Its address is handed to an empty asm first, which makes it escape; each
 * iteration's memory clobber then counts as a read of it, and both stores must be made.
 * noinline: tests/e2e/bench.sh finds this function in the binary and checks the stores. */
__attribute__((noinline)) static double floor_loop(long calls)
{
    __asm__ volatile("" : : "r"(floor_buffer) : "memory");
    double start = now_ns();
    for (long i = 0; i < calls; i++) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        floor_buffer[i & 4095].tsc = ((uint64_t)hi << 32) | lo;
        floor_buffer[i & 4095].value = (uint64_t)i;
        __asm__ volatile("" ::: "memory");
    }
    return (now_ns() - start) / (double)calls;
}

static pthread_barrier_t all_ready;

static void *sender(void *calls)
{
    volatile int sink = 0;
    pthread_barrier_wait(&all_ready);
    for (long i = 0; i < *(long *)calls; i++)
        sink += nop_send((int)i & 7, (int)i);
    return NULL;
}

static int threads_loop(long threads, long calls)
{
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    if (!t || threads < 1 || pthread_barrier_init(&all_ready, NULL, (unsigned)threads + 1) != 0)
        return 2;
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, sender, &calls) != 0)
            return 1;
    pthread_barrier_wait(&all_ready);
    double start = now_ns();
    for (long i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%.3f\n", (now_ns() - start) / (double)(threads * calls));
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 3 && strcmp(argv[1], "--threads") == 0)
        return threads_loop(atol(argv[2]), atol(argv[3]));
    if (argc > 1 && strcmp(argv[1], "--floor") == 0) {
        printf("%.3f\n", floor_loop(argc > 2 ? atol(argv[2]) : 5000000));
        return 0;
    }
    long calls = argc > 1 ? atol(argv[1]) : 5000000;
    volatile int sink = 0;
    for (long i = 0; i < 100000; i++) /* warm up: resolve, first block, caches */
        sink += nop_send((int)i & 7, (int)i);
    double start = now_ns();
    for (long i = 0; i < calls; i++)
        sink += nop_send((int)i & 7, (int)i);
    double elapsed = now_ns() - start;
    printf("%.3f\n", elapsed / (double)calls);
    return sink == 42 ? 1 : 0;
}
