/* Sends (nop_send, traced by the benchmark's copy of the library) from known call chains, for
 * tests/e2e/stacks.sh. Actor ids tell the chains apart:
 *   1: main > outer_send > middle_send (static) > inner_send > nop_send, ROUNDS times
 *   2: main > stacklinked_send (libstacklinked.so) > lib_inner (static there) > nop_send
 *   3: the same in libstackdl.so, loaded with dlopen from DL_PATH
 *   4: a SIGUSR1 handler, on_signal > nop_send
 *   5: with "storm", a SIGALRM handler every 20 us while chain 1 runs, so that some land
 *      inside a capture
 * Usage: stacks ROUNDS DL_PATH [storm] */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

int nop_send(int actor, int msg);
int stacklinked_send(int actor, int msg);

#define KEEP_FRAME() __asm__ volatile("" ::: "memory") /* no tail call */

__attribute__((noinline)) int inner_send(int msg);
__attribute__((noinline)) int outer_send(int msg);

__attribute__((noinline)) int inner_send(int msg)
{
    int r = nop_send(1, msg);
    KEEP_FRAME();
    return r;
}

__attribute__((noinline)) static int middle_send(int msg)
{
    int r = inner_send(msg);
    KEEP_FRAME();
    return r + 1;
}

__attribute__((noinline)) int outer_send(int msg)
{
    int r = middle_send(msg);
    KEEP_FRAME();
    return r + 1;
}

static void on_signal(int sig)
{
    nop_send(4, sig);
    KEEP_FRAME();
}

static void on_alarm(int sig)
{
    nop_send(5, sig);
    KEEP_FRAME();
}

static void start_storm(void)
{
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &every, NULL);
}

static void stop_storm(void)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
}

static int send_from_dlopened(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW);
    int (*send)(int, int) = lib ? (int (*)(int, int))dlsym(lib, "stackdl_send") : NULL;
    if (!send) {
        fprintf(stderr, "stacks: cannot load %s: %s\n", path, dlerror());
        return -1;
    }
    send(3, 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: stacks ROUNDS DL_PATH [storm]\n");
        return 2;
    }
    int rounds = atoi(argv[1]), storm = argc > 3 && strcmp(argv[3], "storm") == 0;
    if (storm)
        start_storm();
    for (int i = 0; i < rounds; i++)
        outer_send(i);
    if (storm)
        stop_storm();
    stacklinked_send(2, 0);
    if (send_from_dlopened(argv[2]) < 0)
        return 1;
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    return 0;
}
