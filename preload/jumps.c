/* Jumps out of signal handlers and steps. A handler that leaves by siglongjmp (a probe of an
 * unmapped address, a watchdog) never returns to the recorder's handler in front of it, and a
 * runtime that longjmps out of a failing step (Aether's panic) never returns to the shim's
 * trampoline: what they raised for the thread (in a handler, a recording call in progress, the
 * current actor, the shim depth) would stay raised, and the thread would record nothing more.
 * So the jump functions are wrapped: before jumping, each frame the jump leaves (at_frame in
 * actortrace.h, pushed by signals.c's handler and by trampolines) is undone, innermost first,
 * and the shim depth is lowered when the jump leaves the outermost wrapper (at_enter).
 *
 * A frame is left when the jump's target is above it on its stack (stacks grow down), or, for
 * a frame on an alternate signal stack, when the target is not on that stack at all. The
 * target's stack pointer is in the jmp_buf, mangled by glibc with the thread's pointer guard
 * (rotated left 17 bits after an xor with %fs:0x30); a check at the first use makes sure that
 * reading it gives the caller's stack, and leaves the frames alone when it does not. */
#include <dlfcn.h>
#include <setjmp.h>

#include "jumps.h"
#include "util.h"

#define JB_RSP 6 /* glibc's x86-64 __jmp_buf: rbx, rbp, r12-r15, rsp, pc */

typedef void jump_fn(struct __jmp_buf_tag *, int);
static jump_fn *real_longjmp, *real__longjmp, *real_siglongjmp, *real___longjmp_chk;
static int readable = -1; /* the jmp_buf's stack pointer can be read: 1, 0, -1 unknown;
                           * release / acquire, after the pointers above */

static uintptr_t target_sp(const struct __jmp_buf_tag *env)
{
    uintptr_t guard, v = (uintptr_t)env->__jmpbuf[JB_RSP];
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    return ((v >> 17) | (v << 47)) ^ guard;
}

/* setjmp saves the stack pointer its caller has after the call: within this frame. */
static __attribute__((noinline)) int check_readable(void)
{
    jmp_buf env;
    char here;
    if (_setjmp(env))
        return 0;
    uintptr_t sp = target_sp(env), local = (uintptr_t)&here;
    return sp <= local && local - sp < 4096;
}

void at__jumps_resolve(void)
{
    if (__atomic_load_n(&readable, __ATOMIC_ACQUIRE) >= 0)
        return;
    *(void **)&real_longjmp = dlsym(RTLD_NEXT, "longjmp");
    *(void **)&real__longjmp = dlsym(RTLD_NEXT, "_longjmp");
    *(void **)&real_siglongjmp = dlsym(RTLD_NEXT, "siglongjmp");
    *(void **)&real___longjmp_chk = dlsym(RTLD_NEXT, "__longjmp_chk");
    /* threads racing here store the same values */
    __atomic_store_n(&readable, check_readable(), __ATOMIC_RELEASE);
}

static int left(const struct at_frame *frame, uintptr_t target)
{
    if (frame->stack_hi && target - frame->stack_lo >= frame->stack_hi - frame->stack_lo)
        return 1;
    return target > (uintptr_t)frame;
}

/* Undoes what the frames the jump to `target` leaves had raised. */
static void leave(uintptr_t target)
{
    struct at_thread *self = &at__self;
    struct at_frame *frame;
    while ((frame = self->frames) && left(frame, target)) {
        self->frames = frame->outer;
        self->depth = frame->depth;
        self->depth_sp = frame->depth_sp;
        frame->unwound = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (frame->unwind)
            frame->unwind(frame);
    }
    if (self->depth && target > self->depth_sp)
        self->depth = 0;
}

static void before_jump(struct __jmp_buf_tag *env)
{
    at__jumps_resolve();
    /* relaxed: resolved above, on this thread or with acquire */
    if (__atomic_load_n(&readable, __ATOMIC_RELAXED) > 0 && (at__self.frames || at__self.depth))
        leave(target_sp(env));
}

AT_EXPORT void longjmp(jmp_buf env, int value)
{
    before_jump(env);
    real_longjmp(env, value);
    __builtin_unreachable();
}

AT_EXPORT void _longjmp(jmp_buf env, int value)
{
    before_jump(env);
    real__longjmp(env, value);
    __builtin_unreachable();
}

AT_EXPORT void siglongjmp(sigjmp_buf env, int value)
{
    before_jump(env);
    real_siglongjmp(env, value);
    __builtin_unreachable();
}

/* _FORTIFY_SOURCE's longjmp */
AT_EXPORT void __longjmp_chk(struct __jmp_buf_tag *env, int value)
{
    before_jump(env);
    real___longjmp_chk(env, value);
    __builtin_unreachable();
}
