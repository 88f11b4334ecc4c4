/* Sends (nop_send, traced by the benchmark's copy of the library) from known call chains, for
 * tests/e2e/stacks.sh. Actor ids tell the chains apart:
 *   1: main > outer_send > middle_send (static) > inner_send > nop_send, ROUNDS times
 *   2: main > stacklinked_send (libstacklinked.so) > lib_inner (static there) > nop_send
 *   3: the same in libstackdl.so, loaded with dlopen from DL_PATH
 *   4: a SIGUSR1 handler, on_signal > nop_send
 *   5: with "storm", a SIGALRM handler every 20 us while chain 1 runs, so that some land
 *      inside a capture
 *   6: with "relay", also main > relay_send > nop_relay (libnop.so, the runtime) > nop_send,
 *      ROUNDS / 4 times
 *   7: with "table", only this: main > branch > ... > branch > nop_send, 13 branch levels each
 *      called from one of two call sites, down each of the 8192 paths (more distinct stacks
 *      than the recorder's table holds), twice
 *   8: with "expression", only this: main > nop_send once, then a SIGALRM handler every 20 us,
 *      on_alarm > nop_send, while main spins ROUNDS times at the end of 40 frames of descend()
 *      in spin_cfa_expression, whose frame the unwinder's fast path cannot follow (its CFA is
 *      a DWARF expression): each walk through it takes libunwind's slow path, two system calls
 *      a frame. Prints the number of alarms handled.
 * Usage: stacks ROUNDS DL_PATH [storm|relay|table|expression] */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

int nop_send(int actor, int msg);
int nop_relay(int actor, int msg);
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

__attribute__((noinline)) int relay_send(int msg);

__attribute__((noinline)) int relay_send(int msg)
{
    int r = nop_relay(6, msg);
    KEEP_FRAME();
    return r;
}

#define TABLE_LEVELS 13

/* Sends down path: bit i chooses the call site of level i, so each path is a distinct stack.
 * The asm statements keep the two calls apart (the compiler would merge identical ones). */
__attribute__((noinline)) int branch(int levels, unsigned path);

__attribute__((noinline)) int branch(int levels, unsigned path)
{
    int r;
    if (levels == 0) {
        r = nop_send(7, (int)path);
    } else if (path & 1) {
        __asm__ volatile("nop" ::: "memory");
        r = branch(levels - 1, path >> 1);
    } else {
        __asm__ volatile("nop; nop" ::: "memory");
        r = branch(levels - 1, path >> 1);
    }
    KEEP_FRAME();
    return r;
}

static void on_signal(int sig)
{
    nop_send(4, sig);
    KEEP_FRAME();
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    nop_send(5, sig);
    alarms++;
    KEEP_FRAME();
}

/* spin_cfa_expression(spins): counts spins (at least 1) down. Its CFA is given as the
 * expression rsp + 16 rather than as a register and offset. */
long spin_cfa_expression(long spins);
__asm__(".text\n"
        ".type spin_cfa_expression, @function\n"
        "spin_cfa_expression:\n"
        ".cfi_startproc\n"
        "    push %rbp\n"
        "    .cfi_escape 0x0f, 0x02, 0x77, 0x10\n" /* DW_CFA_def_cfa_expression: DW_OP_breg7 16 */
        "    .cfi_offset %rbp, -16\n"
        "1:  dec %rdi\n"
        "    jnz 1b\n"
        "    mov %rdi, %rax\n"
        "    pop %rbp\n"
        "    .cfi_def_cfa %rsp, 8\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size spin_cfa_expression, . - spin_cfa_expression\n");

#define DESCEND_LEVELS 40

__attribute__((noinline)) long descend(int levels, long spins);

__attribute__((noinline)) long descend(int levels, long spins)
{
    long r = levels ? descend(levels - 1, spins) : spin_cfa_expression(spins);
    KEEP_FRAME();
    return r + 1;
}

static void start_storm(long period_us)
{
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, period_us}, {0, period_us}};
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
        fprintf(stderr, "usage: stacks ROUNDS DL_PATH [storm|relay|table]\n");
        return 2;
    }
    const char *mode = argc > 3 ? argv[3] : "";
    int rounds = atoi(argv[1]), storm = strcmp(mode, "storm") == 0;
    if (strcmp(mode, "expression") == 0) {
        nop_send(1, 0); /* a handler's event never starts the recorder: main's first does */
        start_storm(20);
        descend(DESCEND_LEVELS, rounds > 0 ? rounds : 1);
        stop_storm();
        printf("alarms %d\n", (int)alarms);
        return 0;
    }
    if (strcmp(mode, "table") == 0) {
        for (unsigned path = 0; path < 2u << TABLE_LEVELS; path++)
            branch(TABLE_LEVELS, path & ((1u << TABLE_LEVELS) - 1));
        return 0;
    }
    if (storm)
        start_storm(20);
    for (int i = 0; i < rounds; i++)
        outer_send(i);
    if (storm)
        stop_storm();
    for (int i = 0; strcmp(mode, "relay") == 0 && i < rounds / 4; i++)
        relay_send(i);
    stacklinked_send(2, 0);
    if (send_from_dlopened(argv[2]) < 0)
        return 1;
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    return 0;
}
