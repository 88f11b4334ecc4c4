/* The way into and out of a patched function's wrapper, so that the caller finds every register
 * as the original function would have left it (docs/PATCHING.md, "Registers").
 *
 * A caller compiled with -fipa-ra (GCC at -O2), or with link-time optimization, keeps values in
 * call-clobbered registers across a call to a function it knows does not write them. The
 * wrapper that runs in the original's place is C code that records the call, and writes what
 * it likes. So the patched entry jumps to a per-function stub (patch_x86.c), then here:
 *
 *   at__patch_enter   saves the caller's call-clobbered general registers and the flags in a
 *                     frame of this thread's shadow stack, with the return address and where it
 *                     lies; puts at__patch_return in its place
 *                     and jumps to the wrapper, rbx pointing at the frame (the caller's rbx
 *                     saved in it): the arguments, in registers and on the stack, are where
 *                     the original would find them.
 *   at__patch_return  the wrapper returns here: restores every saved register but those that
 *                     carry the function's return value (struct at_patch's `returns`) and
 *                     jumps to the caller.
 *
 * Frames are pushed and popped by this thread only, and by the signal handlers that interrupt
 * it, which leave the stack as they found it unless they jump out: so a frame is claimed (the
 * top moved past it) before it is written, and marked complete (`state`) once it is; a
 * handler that interrupts the writing sees an incomplete top frame and leaves it alone. A frame
 * whose call was left by a jump (longjmp, a handler's siglongjmp) is stale: the slot that held
 * its return address no longer holds at__patch_return. The next entry discards such frames
 * from the top, and a return discards every frame above its own. When the shadow stack is full
 * (recursion through patched functions deeper than FRAMES), the call goes to the original
 * untraced, and is counted (said at exit, patch.c).
 *
 * The vector registers are not saved here: the wrappers touch none, and what they call that may
 * is wrapped in AT_VECTORS_KEPT (at_vectors.h), which saves them with at__vectors_save below
 * while a frame is on this thread's shadow stack. */
#include <cpuid.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "at_vectors.h"
#include "patch.h"

#define FRAMES      AT_PATCH_FRAMES
#define FRAME_SIZE  128                  /* the fields below */
#define SHADOW_HEAD AT_PATCH_SHADOW_HEAD /* top, end */

/* Offsets in a frame; the assembly below uses the numbers. */
enum {
    F_STATE = 0, /* 1 once the frame is written; 0 while claimed but not yet, or free */
    F_RSP = 8,   /* where the return address lay: the caller's stack pointer at the call */
    F_RET = 16,  /* the return address */
    F_DESC = 24, /* the function's struct at_patch_desc */
    F_RAX = 32,  /* rax rcx rdx rsi rdi r8 r9 r10 r11 flags, 8 bytes each */
    F_RBX = 112, /* the caller's rbx: rbx holds the frame while the wrapper runs */
};
_Static_assert(F_RAX + 10 * 8 <= F_RBX && F_RBX + 8 <= FRAME_SIZE, "the frame");
_Static_assert(AT_PATCH_DESC_WRAPPER == 0 && AT_PATCH_DESC_ORIGINAL == 8 &&
                   AT_PATCH_DESC_RETURNS == 16,
               "the assembly's offsets in struct at_patch_desc");

/* This thread's shadow stack: {top, end} then frames; 0 until its first patched call. */
__thread uintptr_t at__patch_shadow;

/* Set once, before the first patch: the size of a vector save area, the components saved
 * (edx:eax of xsave) and how (0 fxsave: no xsave; 1 xsave; 2 xsavec, which writes only the
 * components in use). */
uint64_t at__vectors_size;
__attribute__((visibility("hidden"))) uint64_t at__patch_xmask;
__attribute__((visibility("hidden"))) uint32_t at__patch_xsave_kind;
__attribute__((visibility("hidden"))) uint64_t at__patch_untraced; /* calls that found no frame */
static pthread_key_t shadow_key;

/* AMX's tile configuration and data (bits 17, 18): 8 KiB, usable only after the program asks
 * the kernel for them, and never used by the recording path; everything else the system
 * enabled is saved. */
#define NOT_SAVED ((1ull << 17) | (1ull << 18))

static void shadow_free(void *shadow)
{
    at__patch_shadow = 0;
    munmap(shadow, SHADOW_HEAD + FRAMES * FRAME_SIZE);
}

/* The size of the state xsave writes for the components in mask: the larger of the standard
 * format (each component at its fixed offset) and the compacted one (end to end). */
static uint64_t xsave_size(uint64_t mask)
{
    uint64_t standard = 576, compacted = 576; /* the legacy area and the header */
    for (unsigned i = 2; i < 63; i++) {
        unsigned size, offset, flags, unused;
        if (!(mask >> i & 1))
            continue;
        __cpuid_count(0xd, i, size, offset, flags, unused);
        standard = standard > offset + size ? standard : offset + size;
        compacted = (flags & 2 ? (compacted + 63) & ~63ull : compacted) + size;
    }
    return standard > compacted ? standard : compacted;
}

void at__patch_stubs_init(void)
{
    unsigned a, b, c, d;
    if (at__vectors_size)
        return;
    pthread_key_create(&shadow_key, shadow_free);
    __cpuid(1, a, b, c, d);
    uint64_t area = 576; /* fxsave's 512, and the xsave header at__vectors_save zeroes */
    if (c & bit_OSXSAVE) {
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        at__patch_xmask = ((uint64_t)hi << 32 | lo) & ~NOT_SAVED;
        __cpuid_count(0xd, 1, a, b, c, d);
        at__patch_xsave_kind = a & 2 ? 2 : 1; /* xsavec when the processor has it */
        area = xsave_size(at__patch_xmask);
    }
    at__vectors_size = (area + 63) & ~63ull;
}

/* Maps this thread's shadow stack (called from at__patch_enter on the thread's first patched
 * call, signal handlers included: mmap is async-signal-safe). The caller's vector registers are
 * kept around the C library's calls. Returns 0 when there is no memory for it. */
AT_GENERAL_REGS_ONLY __attribute__((used)) static uintptr_t shadow_new(void)
{
    size_t size = SHADOW_HEAD + FRAMES * FRAME_SIZE;
    unsigned char area[at__vectors_size + 64];
    void *aligned = (void *)(((uintptr_t)area + 63) & ~(uintptr_t)63);
    at__vectors_save(aligned);
    /* reserved: a thread touches only the frames it uses */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        at__vectors_restore(aligned);
        return 0;
    }
    uintptr_t *head = p;
    head[0] = (uintptr_t)p + SHADOW_HEAD; /* top */
    head[1] = (uintptr_t)p + size;        /* end */
    at__patch_shadow = (uintptr_t)p;
    pthread_setspecific(shadow_key, p); /* freed when the thread ends */
    at__vectors_restore(aligned);
    return (uintptr_t)p;
}

/* xsave / xrstor of the area at %rdi by at__patch_xsave_kind; edx:eax the components. */
#define VECTOR_OP(save_c, save, fx)                                                                \
    "    cmpl $1, at__patch_xsave_kind(%rip)\n"                                                    \
    "    jb 3f\n"                                                                                  \
    "    je 2f\n"                                                                                  \
    "    " save_c " (%rdi)\n"                                                                      \
    "    jmp 4f\n"                                                                                 \
    "2:  " save " (%rdi)\n"                                                                        \
    "    jmp 4f\n"                                                                                 \
    "3:  " fx " (%rdi)\n"                                                                          \
    "4:\n"

/* at__vectors_save(area), at__vectors_restore(area): the whole vector state (every component
 * but AMX's) into and out of a 64-byte aligned area of at__vectors_size bytes. The xsave header
 * is zeroed first: xrstor of the standard format wants its reserved bytes 0. Both touch only
 * rax, rdx and the area. */
__asm__(".text\n"
        ".globl at__vectors_save\n"
        ".hidden at__vectors_save\n"
        ".type at__vectors_save, @function\n"
        "at__vectors_save:\n"
        "    xor %eax, %eax\n"
        "    mov %rax, 512(%rdi)\n    mov %rax, 520(%rdi)\n    mov %rax, 528(%rdi)\n"
        "    mov %rax, 536(%rdi)\n    mov %rax, 544(%rdi)\n    mov %rax, 552(%rdi)\n"
        "    mov %rax, 560(%rdi)\n    mov %rax, 568(%rdi)\n"
        "    mov at__patch_xmask(%rip), %eax\n"
        "    mov at__patch_xmask+4(%rip), %edx\n" VECTOR_OP(
            "xsavec64", "xsave64",
            "fxsave64") "    ret\n"
                        ".size at__vectors_save, .-at__vectors_save\n"
                        ".globl at__vectors_restore\n"
                        ".hidden at__vectors_restore\n"
                        ".type at__vectors_restore, @function\n"
                        "at__vectors_restore:\n"
                        "    mov at__patch_xmask(%rip), %eax\n"
                        "    mov at__patch_xmask+4(%rip), %edx\n" VECTOR_OP(
                            "xrstor64", "xrstor64",
                            "fxrstor64") "    ret\n"
                                         ".size at__vectors_restore, .-at__vectors_restore\n");

/* The flags a caller can see change: the status flags (CF PF AF ZF SF OF). DF is clear at
 * every call and return (the ABI), and C code writes no other. lahf / sahf carry all but OF,
 * which seto keeps in al; sahf and an add that overflows exactly when al is 1 put them back,
 * at a fraction of what pushfq / popfq cost (popfq is microcoded). FLAGS_SAVE clobbers rax;
 * FLAGS_RESTORE takes the saved word in rax. */
#define FLAGS_SAVE(slot)                                                                           \
    "    seto %al\n"                                                                               \
    "    lahf\n"                                                                                   \
    "    mov %rax, " slot "\n"
#define FLAGS_RESTORE                                                                              \
    "    add $0x7f, %al\n"                                                                         \
    "    sahf\n"

/* at__patch_enter: from a function's stub, which pushed rax and set rax to the function's
 * struct at_patch_desc. On the stack, from rsp: the caller's rax, the return address. Its rare
 * ways (a thread's first call, no frame left) come first, then the way through the wrapper,
 * whose last instruction, the call of the wrapper, lies just before at__patch_return. */
__asm__(".text\n"
        ".Lenter_new:\n"
        "    push %r10\n" /* aligns the stack to 16 bytes for the call, as the ABI wants */
        "    call shadow_new\n"
        "    pop %r10\n"
        "    mov %rax, %r9\n"
        "    test %r9, %r9\n"
        "    jnz .Lenter_stale\n"
        ".Lenter_untraced:\n" /* no frame: to the original, every register as the caller left it */
        "    lock incq at__patch_untraced(%rip)\n"
        "    mov 72(%rsp), %rax\n"
        "    mov 8(%r10), %r11\n"
        "    mov %r11, 72(%rsp)\n"
        "    pop %r11\n    pop %r10\n    pop %r9\n    pop %r8\n    pop %rdi\n    pop %rsi\n"
        "    pop %rdx\n    pop %rcx\n"
        "    xchg %rax, (%rsp)\n" /* the flags, and the caller's rax for the pop */
        FLAGS_RESTORE "    pop %rax\n"
        "    ret\n"
        ".globl at__patch_enter\n"
        ".hidden at__patch_enter\n"
        ".type at__patch_enter, @function\n"
        "at__patch_enter:\n"
        "    lea -8(%rsp), %rsp\n" /* the flags' slot (lea: writes no flag) */
        "    push %rcx\n    push %rdx\n    push %rsi\n    push %rdi\n"
        "    push %r8\n    push %r9\n    push %r10\n    push %r11\n"
        "    mov %rax, %r10\n" /* the desc */
        FLAGS_SAVE("64(%rsp)")
        /* from rsp: r11 r10 r9 r8 rdi rsi rdx rcx flags rax, the return address at 80 */
        "    mov at__patch_shadow@gottpoff(%rip), %r11\n"
        "    mov %fs:(%r11), %r9\n"
        "    test %r9, %r9\n"
        "    jz .Lenter_new\n"
        ".Lenter_stale:\n" /* discard the stale frames on top */
        "    mov (%r9), %r8\n"
        "    lea 64(%r9), %rdx\n"
        "    cmp %rdx, %r8\n"
        "    je .Lenter_push\n"
        "    sub $128, %r8\n"
        "    cmpq $0, (%r8)\n" /* being written by the code this handler interrupted: live */
        "    je .Lenter_push\n"
        "    mov 8(%r8), %rsi\n"
        "    lea at__patch_return(%rip), %rcx\n"
        "    cmp %rcx, (%rsi)\n"
        "    je .Lenter_push\n"
        "    movq $0, (%r8)\n"
        "    mov %r8, (%r9)\n"
        "    jmp .Lenter_stale\n"
        ".Lenter_push:\n"
        "    mov (%r9), %rdi\n" /* the frame */
        "    movq $0, (%rdi)\n" /* incomplete, before it is claimed (a discarded one was not) */
        "    mov %rdi, %r8\n"
        "    add $128, %r8\n"
        "    cmp 8(%r9), %r8\n"
        "    ja .Lenter_untraced\n"
        "    mov %r8, (%r9)\n" /* claimed */
        "    lea 80(%rsp), %rsi\n"
        "    mov %rsi, 8(%rdi)\n"
        "    mov (%rsi), %rdx\n    mov %rdx, 16(%rdi)\n"
        "    mov %r10, 24(%rdi)\n"
        "    mov 72(%rsp), %rdx\n    mov %rdx, 32(%rdi)\n"  /* rax */
        "    mov 56(%rsp), %rdx\n    mov %rdx, 40(%rdi)\n"  /* rcx */
        "    mov 48(%rsp), %rdx\n    mov %rdx, 48(%rdi)\n"  /* rdx */
        "    mov 40(%rsp), %rdx\n    mov %rdx, 56(%rdi)\n"  /* rsi */
        "    mov 32(%rsp), %rdx\n    mov %rdx, 64(%rdi)\n"  /* rdi */
        "    mov 24(%rsp), %rdx\n    mov %rdx, 72(%rdi)\n"  /* r8 */
        "    mov 16(%rsp), %rdx\n    mov %rdx, 80(%rdi)\n"  /* r9 */
        "    mov 8(%rsp), %rdx\n    mov %rdx, 88(%rdi)\n"   /* r10 */
        "    mov 0(%rsp), %rdx\n    mov %rdx, 96(%rdi)\n"   /* r11 */
        "    mov 64(%rsp), %rdx\n    mov %rdx, 104(%rdi)\n" /* flags */
        "    mov %rbx, 112(%rdi)\n"
        /* the slot first: a handler that finds the frame complete finds it live */
        "    lea at__patch_return(%rip), %rcx\n"
        "    mov %rcx, 80(%rsp)\n"
        "    movq $1, (%rdi)\n"  /* complete */
        "    mov %rdi, %rbx\n"   /* the frame, for at__patch_return and unwinders */
        "    mov (%r10), %r11\n" /* the wrapper */
        "    add $8, %rsp\n"
        "    pop %r10\n    pop %r9\n    pop %r8\n    pop %rdi\n    pop %rsi\n    pop %rdx\n"
        "    pop %rcx\n    lea 8(%rsp), %rsp\n    pop %rax\n"
        /* Above the slot (E + 8, the red zone keeps E from a signal frame), and call: the call
         * stores at__patch_return in the slot again, and pushes it on the processor's stack of
         * return addresses too, above the caller's own return address, so that the wrapper's
         * ret and at__patch_return's ret both go where it predicts. (A jmp to the wrapper left
         * both mispredicted, and every ret of the callers above them after.) */
        "    lea 8(%rsp), %rsp\n"
        "    .cfi_startproc\n"
        "    .cfi_def_cfa %rsp, 0\n"
        /* DW_CFA_expression rip (16) and rbx (3): at rbx + 16 and rbx + 112 (DW_OP_breg3) */
        "    .cfi_escape 0x10, 0x10, 0x02, 0x73, 0x10\n"
        "    .cfi_escape 0x10, 0x03, 0x03, 0x73, 0xf0, 0x00\n"
        "    call *%r11\n"
        ".size at__patch_enter, .-at__patch_enter\n"
        /* at__patch_return (in the same assembly, right after the call of the wrapper): the wrapper
         * returned here; its return value in rax, rdx (the vector registers and st0 are as the
         * wrapper left them). rbx holds the call's frame (at__patch_enter put it there; the
         * wrapper, and the original, keep it as a callee-saved register), and the frames above it
         * are stale. Its call frame information says where the caller's return address and rbx are
         * (in the frame rbx points to), so that an unwinder (a stack capture in the wrapper, a
         * debugger, an exception) goes on from the wrapper to the caller. The call of the wrapper
         * is inside that information: unwinders look a return address up at the byte before it (at
         * the call, the rules hold too: rbx holds the frame, rsp is E + 8). The information covers
         * only that call and the first instruction here (an unwinder never finds a wrong rule past
         * them: a stack captured in a handler that interrupted the rest stops there). */
        ".globl at__patch_return\n"
        ".hidden at__patch_return\n"
        ".type at__patch_return, @function\n"
        "at__patch_return:\n"
        "    lea -8(%rsp), %rsp\n"       /* rsp: where the return address lay (E) */
        "    .cfi_endproc\n"             /* what follows moves rsp and rbx: described by nothing */
        "    push %rax\n    push %rdx\n" /* the wrapper's */
        "    mov %rbx, %rdi\n"
        "    mov 24(%rdi), %r10\n"
        "    mov 16(%r10), %ecx\n" /* the return value's registers (AT_RETURN_*) */
        /* the registers to pop, from E down: rax rdx flags rcx rsi rdi r8 r9 r10 r11 rbx */
        "    sub $72, %rsp\n" /* E at 88 */
        "    test $1, %cl\n"
        "    jnz 1f\n"
        "    mov 32(%rdi), %rax\n    mov %rax, 80(%rsp)\n"
        "1:  test $2, %cl\n"
        "    jnz 1f\n"
        "    mov 48(%rdi), %rax\n    mov %rax, 72(%rsp)\n"
        "1:\n"
        "    mov 104(%rdi), %rax\n    mov %rax, 64(%rsp)\n" /* flags */
        "    mov 40(%rdi), %rax\n    mov %rax, 56(%rsp)\n"  /* rcx */
        "    mov 56(%rdi), %rax\n    mov %rax, 48(%rsp)\n"  /* rsi */
        "    mov 64(%rdi), %rax\n    mov %rax, 40(%rsp)\n"  /* rdi */
        "    mov 72(%rdi), %rax\n    mov %rax, 32(%rsp)\n"  /* r8 */
        "    mov 80(%rdi), %rax\n    mov %rax, 24(%rsp)\n"  /* r9 */
        "    mov 88(%rdi), %rax\n    mov %rax, 16(%rsp)\n"  /* r10 */
        "    mov 96(%rdi), %rax\n    mov %rax, 8(%rsp)\n"   /* r11 */
        "    mov 112(%rdi), %rax\n    mov %rax, 0(%rsp)\n"  /* rbx */
        "    mov 16(%rdi), %rax\n"                          /* the return address */
        "    mov at__patch_shadow@gottpoff(%rip), %r11\n"
        "    mov %fs:(%r11), %r9\n"
        "    movq $0, (%rdi)\n" /* popped, with the stale frames above it */
        "    mov %rdi, (%r9)\n"
        "    mov %rax, 88(%rsp)\n" /* only now: until the pop, the slot marks the frame live */
        "    pop %rbx\n    pop %r11\n    pop %r10\n    pop %r9\n    pop %r8\n    pop %rdi\n"
        "    pop %rsi\n    pop %rcx\n    pop %rax\n" FLAGS_RESTORE "    pop %rdx\n    pop %rax\n"
        "    ret\n"
        ".size at__patch_return, .-at__patch_return\n");
