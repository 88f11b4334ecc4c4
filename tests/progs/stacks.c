/* Sends (nop_send, traced by the benchmark's copy of the library) from known call chains, for
 * tests/e2e/stacks.sh. Actor ids tell the chains apart:
 *   1: main > outer_send > middle_send (static) > inner_send > nop_send, ROUNDS times
 *   2: main > stacklinked_send (libstacklinked.so) > lib_inner (static there) > nop_send
 *   3: the same in libstackdl.so, loaded with dlopen from DL_PATH
 *   4: a SIGUSR1 handler, on_signal > nop_send
 * Usage: stacks ROUNDS DL_PATH */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

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
    if (argc != 3) {
        fprintf(stderr, "usage: stacks ROUNDS DL_PATH\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    for (int i = 0; i < rounds; i++)
        outer_send(i);
    stacklinked_send(2, 0);
    if (send_from_dlopened(argv[2]) < 0)
        return 1;
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    return 0;
}
