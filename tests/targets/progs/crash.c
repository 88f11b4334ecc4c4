/* Records SENDS sends from the main thread (nop_send, wrapped by the benchmark's shim), then
 * ends the way its first argument says, while a second thread keeps recording:
 *   segv bus fpe ill abort term int   the fault or signal, default action
 *   exit_ _Exit_                      _exit(7) / _Exit(9)
 *   double_free                       frees a chunk twice: glibc aborts holding the lock of
 *                                     malloc's main arena, which it never lets go of
 *   none                              waits until a signal ends it
 *   idle                              the same, with no second thread recording
 *   chain                             a SIGSEGV handler of the program's own, installed after
 *                                     tracing started, prints a line, restores the default
 *                                     action and returns, so the fault ends the process
 *   trap                              a breakpoint trap (int3), default action, with no
 *                                     second thread (whose stop could end the process)
 *   resethand                         one-shot handlers (SA_RESETHAND): a SIGUSR1 handler that
 *                                     installs itself again, raised 3 times, then a SIGTERM
 *                                     one with SA_NODEFER that raises SIGTERM again to die of
 *                                     it; each prints a line a call
 * Usage: crash HOW SENDS. Prints {"ground_truth":{"send":SENDS}} before ending. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static void *background(void *unused)
{
    (void)unused;
    for (int i = 0;; i++)
        nop_send(2, i); /* keeps recording while the main thread ends the process */
    return NULL;
}

static void on_segv(int sig)
{
    static const char line[] = "program handler ran\n";
    ssize_t ignored = write(STDOUT_FILENO, line, sizeof line - 1);
    (void)ignored;
    signal(sig, SIG_DFL);
}

/* The one-shot handlers of "resethand": the disposition is the default as each begins. */
static void on_usr1_again(int sig)
{
    static const char line[] = "one-shot handler ran\n";
    ssize_t ignored = write(STDOUT_FILENO, line, sizeof line - 1);
    (void)ignored;
    struct sigaction again = {.sa_handler = on_usr1_again, .sa_flags = SA_RESETHAND};
    sigemptyset(&again.sa_mask);
    sigaction(sig, &again, NULL);
}

static void on_term_once(int sig)
{
    static const char line[] = "dying handler ran\n";
    ssize_t ignored = write(STDOUT_FILENO, line, sizeof line - 1);
    (void)ignored;
    raise(sig);
}

static void one_shot_handlers(void)
{
    struct sigaction act = {.sa_handler = on_usr1_again, .sa_flags = SA_RESETHAND};
    sigemptyset(&act.sa_mask);
    sigaction(SIGUSR1, &act, NULL);
    for (int i = 0; i < 3; i++)
        raise(SIGUSR1);
    act = (struct sigaction){.sa_handler = on_term_once, .sa_flags = SA_RESETHAND | SA_NODEFER};
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, NULL);
    raise(SIGTERM);
}

static void bus_error(void)
{
    char path[] = "/tmp/crash-bus.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 4096) < 0)
        abort();
    volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    unlink(path);
    if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
        abort();
    p[0] = 1; /* the page is past the end of the file now */
}

static void double_free(void)
{
    /* larger than tcache and fastbin chunks, and kept from the top chunk by `guard`, so the
     * second free reaches the check made under the arena's lock */
    char *volatile chunk = malloc(4096);
    char *volatile guard = malloc(4096);
    free(chunk);
    free(chunk);
    free(guard);
}

/* Dies of sig with its default action, whatever the disposition this program inherited: a
 * background job of a shell starts with SIGINT ignored, and would then wait for ever. */
static void die_of(int sig)
{
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
}

static void end(const char *how)
{
    volatile int zero = 0;
    if (!strcmp(how, "segv") || !strcmp(how, "chain"))
        *(volatile int *)(uintptr_t)zero = 1;
    else if (!strcmp(how, "bus"))
        bus_error();
    else if (!strcmp(how, "fpe"))
        printf("%d\n", (zero + 7) / zero);
    else if (!strcmp(how, "ill"))
        __builtin_trap();
    else if (!strcmp(how, "trap"))
        __asm__ volatile("int3");
    else if (!strcmp(how, "resethand"))
        one_shot_handlers();
    else if (!strcmp(how, "abort"))
        abort();
    else if (!strcmp(how, "term"))
        die_of(SIGTERM);
    else if (!strcmp(how, "int"))
        die_of(SIGINT);
    else if (!strcmp(how, "exit_"))
        _exit(7);
    else if (!strcmp(how, "_Exit_"))
        _Exit(9);
    else if (!strcmp(how, "double_free"))
        double_free();
    for (;;)
        pause(); /* "none", "idle": until a signal ends it */
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long sends = atol(argv[2]);
    for (long i = 1; i <= sends; i++)
        nop_send(1, (int)i);
    if (!strcmp(argv[1], "chain"))
        signal(SIGSEGV, on_segv);
    pthread_t t;
    if (strcmp(argv[1], "idle") != 0 && strcmp(argv[1], "trap") != 0)
        pthread_create(&t, NULL, background, NULL);
    printf("{\"ground_truth\":{\"send\":%ld}}\n", sends);
    fflush(stdout);
    end(argv[1]);
    return 3;
}
