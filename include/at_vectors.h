/* The vector state (x87, SSE, AVX, AVX-512) of a caller that reached a wrapper through a patched
 * entry (docs/PATCHING.md, "Registers"). The entry saves no vector register: the wrappers and
 * the recording fast path are compiled with general registers only (the shims that declare
 * patchable functions say so first, with the pragma below, before any header), so they leave
 * the vector state as the caller had it, for the original function to use. What they call that
 * may touch vectors (the library's own rarer paths, the C library) is wrapped in
 * AT_VECTORS_KEPT, which saves and restores the whole vector state around it while a patched
 * entry's wrapper runs on this thread, and costs one thread-local load otherwise. */
#ifndef AT_VECTORS_H
#define AT_VECTORS_H

#include <stdint.h>

#define AT_GENERAL_REGS_ONLY __attribute__((target("general-regs-only")))

/* This thread's shadow stack (preload/patch_stubs.c): {top, end} then the frames, 0 before its
 * first patched call. A frame above the base: a patched entry's wrapper may be running. */
extern __thread uintptr_t at__patch_shadow
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
#define AT_PATCH_SHADOW_HEAD 64

/* The size of a save area for at__vectors_save, 64-byte aligned. */
extern uint64_t at__vectors_size __attribute__((visibility("hidden")));
void at__vectors_save(void *area) __attribute__((visibility("hidden")));
void at__vectors_restore(void *area) __attribute__((visibility("hidden")));

AT_GENERAL_REGS_ONLY static inline int at__vectors_unsaved(void)
{
    uintptr_t shadow = at__patch_shadow;
    return __builtin_expect(shadow != 0, 0) &&
           *(const uintptr_t *)shadow != shadow + AT_PATCH_SHADOW_HEAD;
}

/* Runs `statement` with the caller's vector state kept: usable only in a function compiled with
 * general registers only (AT_GENERAL_REGS_ONLY), so that nothing before the save touches it.
 * The area lies on the stack (about 2.7 KiB with AVX-512). */
#define AT_VECTORS_KEPT(statement)                                                                 \
    do {                                                                                           \
        if (at__vectors_unsaved()) {                                                               \
            unsigned char at_area_[at__vectors_size + 64];                                         \
            void *at_aligned_ = (void *)(((uintptr_t)at_area_ + 63) & ~(uintptr_t)63);             \
            at__vectors_save(at_aligned_);                                                         \
            statement;                                                                             \
            at__vectors_restore(at_aligned_);                                                      \
        } else {                                                                                   \
            statement;                                                                             \
        }                                                                                          \
    } while (0)

#endif
