/* actortrace.h: the API a runtime shim is written against.
 *
 * A shim is a C file in shim/ that defines functions with the names of a runtime's exported
 * entry points. Each wrapper resolves the real function once (at_resolve), records one event
 * (at_record), and forwards. This header is the manual: every function says what it returns
 * and from which threads it may be called. */
#ifndef ACTORTRACE_H
#define ACTORTRACE_H

#include <stdint.h>

#include "at_events.h"
#include "at_format.h"
#include "at_record.h"

#define ACTORTRACE_VERSION_MAJOR  0
#define ACTORTRACE_VERSION_MINOR  1
#define ACTORTRACE_VERSION_STRING "0.1"

/* ===== Exporting wrappers ==================================================================
 * Every function a shim defines under a runtime's exported name is marked AT_EXPORT (defined
 * in at_record.h): the library is built with hidden visibility and exports exactly this API,
 * what its inline functions use, and the wrapped symbols, nothing internal. */

/* ===== Recording ===========================================================================
 * at_record(kind, actor, peer, msg, name, path) is in at_record.h. The meaning of actor and
 * peer per kind is the event model in the README ("Writing a shim"): for a send, actor is the
 * receiver and peer the sender; for spawn, the child and the parent; for unpark, the woken and
 * the waker.
 *
 * The timestamp is most of an event's cost (one rdtsc). Events that one exchange records
 * together share one: at_timestamp() read once, then at_record_at(&tsc, ...) for each (a recv
 * and the step it starts). An event in a later wrapper call of the same exchange (the schedule
 * a send's enqueue makes, the park after a step's end) takes at_timestamp_after(stamp), where
 * stamp = at_stamp_of(tsc) was kept after the first: the same timestamp if the thread recorded
 * nothing between, else a fresh one, so that a thread's timestamps never go back. Share only
 * between events that happen together: the runtime's own bookkeeping between them, not a
 * handler's work or a wait. */

/* ===== The actor running on this thread =====================================================
 * Step trampolines set it around a handler, so a send made inside the handler names its
 * sender. Thread-local; no synchronisation. */

static inline uint64_t at_current_actor(void)
{
    return at__self.current_actor;
}

/* Sets the current actor and returns the previous one, to restore when the handler ends. */
static inline uint64_t at_set_current_actor(uint64_t actor)
{
    uint64_t previous = at__self.current_actor;
    at__self.current_actor = actor;
    return previous;
}

/* ===== Outermost calls only =================================================================
 * Runtimes call their own exported functions through the PLT, so one user-level send can pass
 * through several wrappers. at_enter() returns 1 for the outermost wrapper on this thread (the
 * one that records) and 0 for nested ones; every at_enter() is paired with at_leave(). A
 * trampoline that runs user code from inside the runtime (a callback, a handler) saves the
 * depth with at_depth_reset() and puts it back with at_depth_restore(). at_in_wrapper() tells
 * a wrapper of a lower layer whether an outer wrapper is running (so it records nothing of its
 * own) or the program called it directly. */

static inline int at_enter(void)
{
    if (at__self.depth++ != 0)
        return 0;
    /* a jump (longjmp) to a frame above this one leaves the wrapper without at_leave: jumps.c
     * compares the jump's target with this */
    at__self.depth_sp = at__stack_pointer();
    return 1;
}

static inline void at_leave(void)
{
    /* never below 0: a jump out of a trampoline that reset the depth (without a frame) may
     * have lowered it already (jumps.c) */
    at__self.depth -= at__self.depth != 0;
}

static inline int at_in_wrapper(void)
{
    return at__self.depth != 0;
}

static inline uint32_t at_depth_reset(void)
{
    uint32_t saved = at__self.depth;
    at__self.depth = 0;
    return saved;
}

static inline void at_depth_restore(uint32_t saved)
{
    at__self.depth = saved;
}

/* ===== Jumps out of a step ==================================================================
 * A runtime may leave a handler by longjmp (Aether's panic does), past the trampoline that set
 * the current actor and reset the depth: nothing after the call then runs. A trampoline that
 * must undo something when that happens pushes a frame, a local variable of its own, before it
 * calls the handler and pops it after: a jump to a point above the frame (longjmp, _longjmp,
 * siglongjmp, __longjmp_chk, which the library wraps) puts back the depth the frame saved and
 * calls `unwind`, innermost frame first, before it jumps. Signal handlers are frames too
 * (signals.c). Thread-local; no synchronisation; unwind runs on the jumping thread, maybe in a
 * signal handler, so it must be async-signal-safe. */

struct at_frame {
    struct at_frame *outer;
    void (*unwind)(struct at_frame *frame); /* a jump left the frame; NULL: nothing to do */
    uintptr_t stack_lo, stack_hi; /* the alternate signal stack the frame is on, or 0, 0 */
    uintptr_t depth_sp;           /* at_enter's, saved with depth */
    uint32_t depth;
    uint32_t unwound; /* set when a jump left the frame (a pop after it does nothing) */
};

/* Saves the depth into frame and makes it the innermost; on an alternate signal stack when
 * the frame it is pushed inside is and it lies there too. */
static inline void at_frame_push(struct at_frame *frame, void (*unwind)(struct at_frame *))
{
    struct at_frame *outer = at__self.frames;
    *frame = (struct at_frame){
        .outer = outer, .unwind = unwind, .depth_sp = at__self.depth_sp, .depth = at__self.depth};
    if (outer && (uintptr_t)frame - outer->stack_lo < outer->stack_hi - outer->stack_lo) {
        frame->stack_lo = outer->stack_lo;
        frame->stack_hi = outer->stack_hi;
    }
    /* a signal handler on this thread sees the frame whole or not at all */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    at__self.frames = frame;
}

static inline void at_frame_pop(struct at_frame *frame)
{
    if (at__self.frames == frame)
        at__self.frames = frame->outer;
}

/* ===== Names ================================================================================
 * Names are written once, into metadata records, never per event. Each call copies the string
 * (so it takes a lock and may allocate): call it where the runtime registers a name or spawns
 * an actor, never per message. Thread-safe. Returns 0, or a negative errno (-ENOMEM, or
 * -ENOSPC when 8 MiB of names wait for the writer); names that could not be kept are counted
 * and reported on stderr when the trace ends, and their events stay, without the name. */

AT_EXPORT int at_name_msg(uint32_t id, const char *name);
AT_EXPORT int at_name_actor(uint64_t actor, const char *name);

/* Registers a path name ("local", "remote", "spsc") or an extra event kind, and returns its id
 * for at_record's path or kind argument: the same name always gets the same id. Returns 0 when
 * the table is full (255 paths, 192 kinds). Thread-safe. */
AT_EXPORT unsigned at_path_register(const char *name);
AT_EXPORT unsigned at_event_register(const char *name);

/* ===== Resolving the real functions =========================================================
 * Return the next definition of `symbol` after this library (dlsym(RTLD_NEXT)); for glibc's
 * versioned symbols pass the version ("GLIBC_2.3.2"). Return NULL when the symbol does not
 * exist, after printing one line on stderr. Thread-safe; may be called before the library's
 * constructor. Call them outside any lock the runtime may hold. "This library" is
 * libactortrace.so: a shim built as a library of its own (shimgen's) calls dlsym(RTLD_NEXT)
 * itself, since RTLD_NEXT counts from the caller and would find the shim's own wrapper. */

AT_EXPORT void *at_resolve(const char *symbol);
AT_EXPORT void *at_resolve_versioned(const char *symbol, const char *version);

/* Resolves `real` (a function pointer variable named real_<symbol>) on first use. */
#define AT_RESOLVE(real, symbol)                                                                   \
    do {                                                                                           \
        if (AT_UNLIKELY((real) == NULL))                                                           \
            *(void **)&(real) = at_resolve(symbol);                                                \
    } while (0)

/* ===== Entry patching ======================================================================
 * A wrapper is reached through the PLT only. When the runtime is linked into the program (a
 * static archive) or calls its own functions directly, the recorder instead patches the
 * function's entry at start to jump to the wrapper, and sets the wrapper's real_<symbol> to a
 * trampoline that runs the original (docs/PATCHING.md). A shim declares which of its wrappers
 * may be used so, in one table at file scope, after the real_<symbol> pointers:
 *
 *     AT_PATCH_TABLE(AT_PATCHABLE(rt_send, AT_RETURNS_NOTHING),
 *                    AT_PATCHABLE(rt_step, AT_RETURN_RAX));
 *
 * A wrapper in the table must forward through real_<symbol> resolved with AT_RESOLVE (which
 * keeps the trampoline once it is set; so do the library's own shims' resolvers,
 * shim/support.h), and be one a patched entry may run in place of the
 * original: same arguments, same return. The second argument names the registers that carry
 * the function's return value: the patched entry gives the caller back every other register as
 * it was before the call (a caller may keep values in them, knowing the original does not
 * write them), these as the wrapper left them. By the return type (the x86-64 ABI's classes):
 *   void                                              AT_RETURNS_NOTHING
 *   an integer, a pointer, a struct of up to 8 bytes of integers, a struct returned in memory
 *   (larger than 16 bytes: rax holds its address)     AT_RETURN_RAX
 *   __int128, a struct of 9 to 16 bytes of integers   AT_RETURN_RAX | AT_RETURN_RDX
 *   float, double, a struct of up to 8 bytes of them  AT_RETURN_XMM0
 *   a struct of 9 to 16 bytes of floats or doubles    AT_RETURN_XMM0 | AT_RETURN_XMM1
 *   a struct of 16 bytes, one half integers, the other floating
 *                                                     AT_RETURN_RAX | AT_RETURN_XMM0
 *   long double                                       AT_RETURN_X87
 * The patched entry saves no vector register (docs/PATCHING.md, "Registers"): a shim with a
 * table is compiled with general registers only, `#pragma GCC target("general-regs-only")`
 * before its first #include (AT_PATCH_TABLE stops the build otherwise), and whatever its
 * wrappers call outside the library's API (the C library) runs inside AT_VECTORS_KEPT
 * (at_vectors.h). So a wrapper takes and returns no floating-point value: the AT_RETURN_XMM*
 * and AT_RETURN_X87 results pass through as the original leaves them. */
#define AT_RETURNS_NOTHING 0u
#define AT_RETURN_RAX      1u
#define AT_RETURN_RDX      2u
#define AT_RETURN_XMM0     4u
#define AT_RETURN_XMM1     8u
#define AT_RETURN_X87      16u
struct at_patchable {
    const char *symbol;
    void **real;            /* the wrapper's real_<symbol> */
    unsigned returns;       /* AT_RETURN_* */
    const char *patched_in; /* the object whose entry was patched; set by the recorder */
    void *wrapper;          /* the wrapper's address in the library; set by the recorder */
};

/* The pragma undefines __SSE__ for what follows it. */
#ifdef __SSE__
#define AT__GENERAL_REGS_ONLY 0
#else
#define AT__GENERAL_REGS_ONLY 1
#endif

#define AT_PATCHABLE(symbol, returns)                                                              \
    {                                                                                              \
#symbol, (void **)&real_##symbol, returns, 0, 0                                            \
    }
/* aligned: as the struct, not more, so that the tables of several shims lie end to end in the
 * section, one array (the compiler would align a large array to 32 bytes, leaving gaps). */
#define AT_PATCH_TABLE(...)                                                                        \
    _Static_assert(AT__GENERAL_REGS_ONLY, "a shim with patchable wrappers is compiled with "       \
                                          "general registers only: #pragma GCC target("            \
                                          "\"general-regs-only\") before its first #include");     \
    __attribute__((                                                                                \
        section("at_patchable"), used,                                                             \
        aligned(__alignof__(struct at_patchable)))) static struct at_patchable at__patchable[] = { \
        __VA_ARGS__}

/* 1 when the recorder is on (the process is being traced and has not failed or stopped).
 * Shims may skip work that only feeds the recorder (reading a message name) when it is 0. */
AT_EXPORT int at_enabled(void);

#endif
