/* Leaves a signal handler by siglongjmp, as Boehm GC's GC_find_limit does: main probes an
 * unmapped address PROBES times under a SIGSEGV handler that jumps back, then sends SENDS
 * messages to actor 1. With "altstack", the handler runs on an alternate signal stack below the
 * stack it interrupts (malloc'd, for the main thread); with "altstack-high", on one mapped
 * above it (for a thread whose stack is mapped lower, which then does the probes and sends).
 * The probes may come before the first event (the recorder then starts after them) or after
 * it ("late").
 * Usage: jump_probe PROBES SENDS [altstack|altstack-high] [late].
 * Prints {"ground_truth":{"send":N,"probes":P}}. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int nop_send(int actor, int msg);

static sigjmp_buf probe_env;

static void on_segv(int sig)
{
    (void)sig;
    siglongjmp(probe_env, 1);
}

/* An address with nothing mapped: a page mapped, then unmapped. */
static volatile char *unmapped_address(void)
{
    char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        exit(2);
    munmap(page, 4096);
    return page;
}

static int probe(volatile char *address)
{
    if (sigsetjmp(probe_env, 1))
        return 0;
    return *address;
}

/* An alternate signal stack: from malloc (below the main thread's stack), or mapped at a hint
 * far above the usual mappings (above it). */
static void use_altstack(int high)
{
    size_t size = 1 << 16;
    void *stack = malloc(size);
    if (high)
        stack = mmap((void *)0x7ff000000000ull, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!stack || stack == MAP_FAILED || (high && (uintptr_t)stack < (uintptr_t)&size))
        exit(2);
    stack_t ss = {.ss_sp = stack, .ss_size = size};
    if (sigaltstack(&ss, NULL) != 0)
        exit(2);
}

static int probes, sends, late, alt, high;

static void *probe_and_send(void *unused)
{
    (void)unused;
    if (alt)
        use_altstack(high);
    struct sigaction act = {.sa_handler = on_segv, .sa_flags = alt ? SA_ONSTACK : 0};
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, NULL);
    volatile char *address = unmapped_address();
    int sent = 0;
    if (late)
        nop_send(1, sent++);
    for (int i = 0; i < probes; i++)
        probe(address);
    while (sent < sends)
        nop_send(1, sent++);
    return NULL;
}

int main(int argc, char **argv)
{
    probes = argc > 1 ? atoi(argv[1]) : 1;
    sends = argc > 2 ? atoi(argv[2]) : 1000;
    const char *stack = argc > 3 ? argv[3] : "";
    late = argc > 4 && strcmp(argv[4], "late") == 0;
    alt = strncmp(stack, "altstack", 8) == 0;
    high = strcmp(stack, "altstack-high") == 0;
    pthread_t thread;
    if (high) {
        if (pthread_create(&thread, NULL, probe_and_send, NULL) != 0)
            return 2;
        pthread_join(thread, NULL);
    } else {
        probe_and_send(NULL);
    }
    printf("{\"ground_truth\":{\"send\":%d,\"probes\":%d}}\n", sends, probes);
    return 0;
}
