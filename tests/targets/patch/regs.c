/* Every register a patched function does not write is left to its caller as it was: the
 * general call-clobbered ones, the flags, and the whole vector state (x87, xmm, the upper
 * halves of ymm and zmm, zmm16-31, the mask registers, as far as the machine has them).
 * rt_park, patched by the test copy's shim, is written here in assembly so that it writes no
 * register and no flag (only the memory word `parked`); call_patterns() loads patterns into
 * every register, calls it, and compares what it finds after. With a third argument, a timer's
 * handler calls rt_park too, every 200 us, in the middle of the calls and of their way in and out
 * of the wrapper. Usage: regs CALLS [signals]. Prints the number of calls after which some
 * register differed, the first difference, and the calls made (the handler's included). */
#include <cpuid.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

int parked;
void rt_park(int worker);

__asm__(".text\n"
        ".globl rt_park\n"
        ".type rt_park, @function\n"
        "rt_park:\n"
        "    movl $1, parked(%rip)\n" /* one memory write, no register, no flag */
        "    ret\n"
        ".size rt_park, .-rt_park\n");

/* The registers before and after the call, and the vector state (xsave's standard format);
 * the assembly below uses the offsets asserted here. */
struct regs {
    uint64_t gpr[9]; /* rax rcx rdx rsi rdi r8 r9 r10 r11 */
    uint64_t flags;
    uint64_t mask; /* the xsave components loaded and compared */
};
#define AREA 8192
struct state {
    struct regs before, after;
    uint8_t xbefore[AREA] __attribute__((aligned(64)));
    uint8_t xafter[AREA] __attribute__((aligned(64)));
};
_Static_assert(offsetof(struct state, after) == 88, "after at 88");
_Static_assert(offsetof(struct state, xbefore) == 192, "xbefore at 192");
_Static_assert(offsetof(struct state, xafter) == 192 + AREA, "xafter at 8384");

/* call_patterns(state): loads before's registers and xbefore's vector state, calls rt_park,
 * stores the registers into after and the vector state into xafter. */
void call_patterns(struct state *s);
__asm__(".text\n"
        ".type call_patterns, @function\n"
        "call_patterns:\n"
        "    push %rbx\n    push %rbp\n    push %r12\n    push %r13\n    push %r14\n"
        "    push %r15\n    sub $8, %rsp\n" /* 16-byte alignment at the call */
        "    mov %rdi, %rbx\n"
        "    mov 80(%rbx), %eax\n    mov 84(%rbx), %edx\n    xrstor64 192(%rbx)\n"
        "    pushq 72(%rbx)\n    popfq\n"
        "    mov 0(%rbx), %rax\n    mov 8(%rbx), %rcx\n    mov 16(%rbx), %rdx\n"
        "    mov 24(%rbx), %rsi\n    mov 32(%rbx), %rdi\n    mov 40(%rbx), %r8\n"
        "    mov 48(%rbx), %r9\n    mov 56(%rbx), %r10\n    mov 64(%rbx), %r11\n"
        "    call rt_park\n"
        "    pushfq\n    popq 160(%rbx)\n"
        "    mov %rax, 88(%rbx)\n    mov %rcx, 96(%rbx)\n    mov %rdx, 104(%rbx)\n"
        "    mov %rsi, 112(%rbx)\n    mov %rdi, 120(%rbx)\n    mov %r8, 128(%rbx)\n"
        "    mov %r9, 136(%rbx)\n    mov %r10, 144(%rbx)\n    mov %r11, 152(%rbx)\n"
        "    mov 80(%rbx), %eax\n    mov 84(%rbx), %edx\n    xsave64 8384(%rbx)\n"
        "    add $8, %rsp\n    pop %r15\n    pop %r14\n    pop %r13\n    pop %r12\n    pop %rbp\n"
        "    pop %rbx\n    ret\n"
        ".size call_patterns, .-call_patterns\n");

/* The components compared: x87, SSE, AVX, and AVX-512's three, those the system enabled. */
#define COMPARED  0xe7ull
#define XSTATE_BV 512

static uint64_t enabled_components(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32 | lo) & COMPARED;
}

/* Where component i lies in the standard format, and its length. */
static void component(unsigned i, unsigned *offset, unsigned *size)
{
    unsigned a, b, c, d;
    if (i == 0) {
        *offset = 0, *size = 160; /* x87, MXCSR included (compared with SSE below too) */
    } else if (i == 1) {
        *offset = 160, *size = 256; /* xmm0-15 */
    } else {
        __cpuid_count(0xd, i, a, b, c, d);
        *offset = b, *size = a;
    }
}

/* Fills the state with random register values, the x87 control words kept valid. */
static void fill(struct state *s, uint64_t mask)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 9; i++)
        s->before.gpr[i] = (uint64_t)random() << 32 ^ (uint64_t)random();
    s->before.gpr[4] = 3; /* rdi: the worker rt_park is given */
    /* CF PF AF ZF SF OF at random (each set and clear across the calls), IF; DF clear as the
     * ABI wants */
    s->before.flags = ((uint64_t)random() & 0x8d5) | 0x202;
    s->before.mask = mask;
    for (unsigned i = 1; i < 8; i++) {
        unsigned offset, size;
        component(i, &offset, &size);
        for (unsigned b = 0; mask >> i & 1 && b < size; b++)
            s->xbefore[offset + b] = (uint8_t)random();
    }
    uint16_t fcw = 0x37f;
    uint32_t mxcsr = 0x1f80 | 0x3f; /* the sticky exception flags set: a change shows */
    memcpy(s->xbefore, &fcw, sizeof fcw);
    memcpy(s->xbefore + 24, &mxcsr, sizeof mxcsr);
    memcpy(s->xbefore + XSTATE_BV, &mask, sizeof mask);
}

/* Writes the init values of the components xsave left out (in their init state). */
static void fill_init(uint8_t *x, uint64_t mask)
{
    uint64_t in_use;
    memcpy(&in_use, x + XSTATE_BV, sizeof in_use);
    for (unsigned i = 0; i < 8; i++) {
        unsigned offset, size;
        component(i, &offset, &size);
        if (mask >> i & 1 && !(in_use >> i & 1)) {
            memset(x + offset + (i == 0 ? 32 : 0), 0, size - (i == 0 ? 32 : 0));
            if (i == 0) {
                memset(x, 0, 24);
                x[0] = 0x7f, x[1] = 0x03;
            }
        }
    }
}

/* The name of the first register that differs, NULL when none does. */
static const char *first_difference(struct state *s)
{
    static const char *const names[] = {"rax", "rcx", "rdx", "rsi", "rdi",
                                        "r8",  "r9",  "r10", "r11", "flags"};
    static const char *const parts[] = {"x87", "xmm",    "ymm (upper halves)", "bnd",
                                        "bnd", "opmask", "zmm (upper halves)", "zmm16-31"};
    for (int i = 0; i < 10; i++)
        if ((&s->before.gpr[0])[i] != (&s->after.gpr[0])[i])
            return names[i];
    fill_init(s->xafter, s->before.mask);
    if (memcmp(s->xbefore + 24, s->xafter + 24, 4) != 0)
        return "mxcsr";
    for (unsigned i = 0; i < 8; i++) {
        unsigned offset, size;
        component(i, &offset, &size);
        if (i == 0)
            offset = 32, size = 128; /* the st registers; the control words are below */
        if (s->before.mask >> i & 1 && memcmp(s->xbefore + offset, s->xafter + offset, size))
            return parts[i];
    }
    if (s->before.mask & 1 && memcmp(s->xbefore, s->xafter, 4) != 0)
        return "x87 control or status";
    return NULL;
}

static volatile long handler_calls;

static void on_timer(int sig)
{
    rt_park(sig);
    handler_calls++;
}

int main(int argc, char **argv)
{
    static struct state s;
    long calls = argc > 1 ? atol(argv[1]) : 200, bad = 0, parks = 0;
    const char *first = NULL;
    if (argc > 2) {
        rt_park(0); /* the first event, out of the handler: the recorder starts here */
        handler_calls++;
        signal(SIGALRM, on_timer);
        setitimer(ITIMER_REAL, &(struct itimerval){{0, 200}, {0, 200}}, NULL);
    }
    srandom(1);
    for (long i = 0; i < calls; i++) {
        fill(&s, enabled_components());
        parked = 0;
        call_patterns(&s);
        parks += parked;
        const char *what = first_difference(&s);
        if (what && !bad++)
            first = what;
    }
    setitimer(ITIMER_REAL, &(struct itimerval){{0, 0}, {0, 0}}, NULL);
    printf("%ld of %ld calls changed a register%s%s\n", bad, calls, first ? "; first: " : "",
           first ? first : "");
    printf("{\"ground_truth\":{\"park\":%ld}}\n", calls + handler_calls);
    return bad != 0 || parks < calls;
}
