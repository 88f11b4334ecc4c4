/* Entry patching (preload/patch_x86.c) on the hand-written functions of asm/patch_cases.S:
 * what can be relocated is patched, and the patched function, called as before, passes through
 * its wrapper and still returns what it did; what cannot is refused and left byte for byte as
 * it was. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "actortrace.h"
#include "patch.h"
#include "unit.h"

typedef int (*fn)(int);

#define CASE(name)                                                                                 \
    extern int name(int);                                                                          \
    extern char name##_end[];
CASE(case_riprel)
CASE(case_short)
CASE(case_loop)
CASE(case_jump)
CASE(case_jump_short)
CASE(case_call)
CASE(case_short_branch)
CASE(case_jrcxz)
CASE(case_table)
CASE(case_table_into)
CASE(case_calls_pointer)
CASE(case_calls_deep)
CASE(case_calls_plt)
CASE(case_calls_after_local)

static fn real; /* the trampoline of the case under test */
static int wrapper_calls;

static int wrapper(int x)
{
    wrapper_calls++;
    return real(x);
}

static int patch(fn f, const char *end, struct at_patch *p)
{
    *p = (struct at_patch){.entry = (uintptr_t)f,
                           .size = (size_t)(end - (const char *)f),
                           .wrapper = (void *)wrapper,
                           .returns = AT_RETURN_RAX,
                           .prot = PROT_READ | PROT_EXEC};
    int err = at__patch_entry(p);
    real = (fn)p->trampoline;
    return err;
}

/* Patches f and checks that f(x) == want for each x, each call through the wrapper once. */
static void patched_case(const char *name, fn f, const char *end, const int *xs, int n,
                         int (*want)(int))
{
    struct at_patch p;
    char label[128];
    int err = patch(f, end, &p);
    snprintf(label, sizeof label, "%s: patched (%s)", name, err ? p.why : "ok");
    check(err == 0, label);
    if (err)
        return;
    snprintf(label, sizeof label, "%s: through the stub (no call that no compiler sees into)",
             name);
    check(!p.direct, label);
    int right = 1;
    wrapper_calls = 0;
    for (int i = 0; i < n; i++)
        right &= f(xs[i]) == want(xs[i]);
    snprintf(label, sizeof label, "%s: returns the same values, each call through the wrapper",
             name);
    check(right && wrapper_calls == n, label);
}

/* Patches f and checks whether its entry goes to the wrapper directly (direct) or through the
 * stub, and that f(x) == 3 * x through the wrapper either way. */
static void direct_case(const char *name, fn f, const char *end, int direct)
{
    struct at_patch p;
    char label[160];
    int err = patch(f, end, &p);
    snprintf(label, sizeof label, "%s: patched, %s", name, direct ? "direct" : "through the stub");
    check(err == 0 && p.direct == direct, label);
    if (err)
        return;
    wrapper_calls = 0;
    int right = f(5) == 15 && f(-7) == -21;
    snprintf(label, sizeof label, "%s: returns the same values, each call through the wrapper",
             name);
    check(right && wrapper_calls == 2, label);
}

/* Checks that patching f is refused with a reason containing `because` and changes nothing. */
static void refused_case(const char *name, fn f, const char *end, const char *because)
{
    uint8_t before[64];
    size_t size = (size_t)(end - (const char *)f);
    memcpy(before, (const void *)f, size);
    struct at_patch p;
    char label[192];
    int err = patch(f, end, &p);
    snprintf(label, sizeof label, "%s: refused (%s)", name, p.why);
    check(err < 0 && strstr(p.why, because) != NULL, label);
    snprintf(label, sizeof label, "%s: left unchanged", name);
    check(memcmp(before, (const void *)f, size) == 0 && p.trampoline == NULL, label);
}

/* Functions whose return value is in other registers than rax, or whose arguments are on the
 * stack: each patched with a wrapper of its own type, which must get its arguments and give
 * back its result through the stub (patch_stubs.c). */
struct six {
    long w[6];
};
extern long case_stack(long, long, long, long, long, long, struct six);
extern __int128 case_pair(long, long);
extern double case_double(double);
extern long double case_x87(long double);
extern char case_stack_end[], case_pair_end[], case_double_end[], case_x87_end[];

static long (*real_stack)(long, long, long, long, long, long, struct six);
static __int128 (*real_pair)(long, long);
static double (*real_double)(double);
static long double (*real_x87)(long double);

static long stack_wrapper(long a, long b, long c, long d, long e, long f, struct six s)
{
    wrapper_calls++;
    return real_stack(a, b, c, d, e, f, s);
}
static __int128 pair_wrapper(long lo, long hi)
{
    wrapper_calls++;
    return real_pair(lo, hi);
}
static double double_wrapper(double x)
{
    wrapper_calls++;
    return real_double(x);
}
static long double x87_wrapper(long double x)
{
    wrapper_calls++;
    return real_x87(x);
}

/* Patches f (ending at end) to go to wrapper, the return value in `returns`; the trampoline. */
static void *patch_typed(const char *name, void *f, const char *end, void *wrapper,
                         unsigned returns)
{
    struct at_patch p = {.entry = (uintptr_t)f,
                         .size = (size_t)(end - (const char *)f),
                         .wrapper = wrapper,
                         .returns = returns,
                         .prot = PROT_READ | PROT_EXEC};
    char label[160];
    int err = at__patch_entry(&p);
    snprintf(label, sizeof label, "%s: patched (%s)", name, err ? p.why : "ok");
    check(err == 0, label);
    return p.trampoline;
}

static void typed_cases(void)
{
    struct six s = {{1, 20, 300, 4000, 50000, 600000}};
    *(void **)&real_stack = patch_typed("stack arguments", (void *)case_stack, case_stack_end,
                                        (void *)stack_wrapper, AT_RETURN_RAX);
    *(void **)&real_pair = patch_typed("__int128 in rdx:rax", (void *)case_pair, case_pair_end,
                                       (void *)pair_wrapper, AT_RETURN_RAX | AT_RETURN_RDX);
    *(void **)&real_double = patch_typed("double in xmm0", (void *)case_double, case_double_end,
                                         (void *)double_wrapper, AT_RETURN_XMM0);
    *(void **)&real_x87 = patch_typed("long double in st0", (void *)case_x87, case_x87_end,
                                      (void *)x87_wrapper, AT_RETURN_X87);
    wrapper_calls = 0;
    check(real_stack && case_stack(0, 0, 0, 0, 0, 0, s) == 654321,
          "stack arguments: the wrapper and the original find them");
    check(real_pair && case_pair(5, 7) == ((__int128)7 << 64 | 5), "__int128: both halves kept");
    check(real_double && case_double(1.25) == 2.5, "double: xmm0 kept");
    check(real_x87 && case_x87(1.5L) == 3.0L, "long double: st0 kept");
    check(wrapper_calls == 4, "each through its wrapper");
}

static int plus42(int x)
{
    return x + 42;
}
static int times3(int x)
{
    return x * 3;
}
static int times3_plus1(int x)
{
    return x * 3 + 1;
}
static int switch_of(int x)
{
    return x >= 0 && x <= 2 ? 10 + x : -1;
}
static int plus7_or_minus1(int x)
{
    return x ? x + 7 : -1;
}

int main(void)
{
    static const int xs[] = {0, 1, -5, 1000, 123456};
    int n = (int)(sizeof xs / sizeof xs[0]);
    patched_case("rip-relative load first", case_riprel, case_riprel_end, xs, n, plus42);
    patched_case("tail jump first", case_jump, case_jump_end, xs, n, times3);
    patched_case("call first", case_call, case_call_end, xs, n, times3_plus1);
    patched_case("short conditional branch in the first bytes", case_short_branch,
                 case_short_branch_end, xs, n, plus7_or_minus1);
    static const int cases[] = {0, 1, 2, 3, -1, 1000};
    patched_case("jump table past the first bytes", case_table, case_table_end, cases, 6,
                 switch_of);
    refused_case("jump table into the first bytes", case_table_into, case_table_into_end,
                 "its jump table's entry 2 goes into the bytes the jump replaces");
    refused_case("3-byte function", case_short, case_short_end, "fewer than the jump needs");
    refused_case("2-byte tail jump", case_jump_short, case_jump_short_end,
                 "fewer than the jump needs");
    refused_case("loop back into the first bytes", case_loop, case_loop_end,
                 "goes into the bytes the jump replaces");
    refused_case("jrcxz in the first bytes", case_jrcxz, case_jrcxz_end, "cannot be relocated");
    direct_case("a call through a register", case_calls_pointer, case_calls_pointer_end, 1);
    direct_case("a call through a register, one call deep", case_calls_deep, case_calls_deep_end,
                1);
    direct_case("a call to a PLT entry", case_calls_plt, case_calls_plt_end, 1);
    direct_case("a call through a register after a call that might not return",
                case_calls_after_local, case_calls_after_local_end, 0);
    typed_cases();
    check(case_loop(4) == 12 && case_short(9) == 9 && case_table_into(0) == 1 &&
              case_table_into(2) == 2,
          "refused functions still run");
    return failures != 0;
}
