/* Entry patching: patch.c's entry points, and patch_x86.c's, used by patch.c and its unit
 * test. */
#ifndef AT_PATCH_H
#define AT_PATCH_H

#include <stddef.h>
#include <stdint.h>

/* At load (lifecycle.c's constructor): patches the functions of the objects loaded so far,
 * unless ACTORTRACE_PATCH=0 or no shim has a patchable wrapper. */
void at__patch_init(void);
/* Patches the objects loaded since the last call (patch_dlopen.c, after dlopen). */
void at__patch_new_objects(void);
/* After a dlclose: forgets the objects no longer loaded, so that one loaded later at the same
 * address is patched, and a patched function whose object went is patched anew in the copy
 * loaded again (its wrapper's real_ is cleared, never left on a trampoline into code gone). */
void at__patch_forget_unloaded(void);
/* 1 when the function whose wrapper forwards through *real was patched, in an object that
 * defines symbol (in .symtab, else .dynsym): a shim's check of a runtime linked into a program,
 * whose functions dlsym cannot find. */
int at__patch_defines(void **real, const char *symbol);

/* One function to patch. The caller fills entry, size, wrapper and prot; at__patch_entry sets
 * trampoline, or why. */
/* The most bytes a patched entry displaces: the far jump's 14, and the instruction it ends in. */
#define AT_PATCH_WINDOW 32

struct at_patch {
    uintptr_t entry;   /* the function's first byte */
    size_t size;       /* its length, from the symbol table */
    void *wrapper;     /* where calls to it go once patched (through patch_stubs.c) */
    unsigned returns;  /* the registers of its return value: AT_RETURN_* (actortrace.h) */
    int prot;          /* the protection of its pages, restored after the write */
    int stub_only;     /* every call through the stub (ACTORTRACE_PATCH=stub), never direct */
    void *trampoline;  /* runs the displaced instructions and jumps back into the function */
    uintptr_t foreign; /* the first address past the entry that a jump from elsewhere in the
                        * object goes to (a .cold part's), within AT_PATCH_WINDOW; 0 = none */
    void **real;       /* the wrapper's real_<symbol>, set to the trampoline before the entry
                        * jumps to the wrapper, which may run at once on another thread */
    int direct;        /* the entry goes to the wrapper without the stub: no caller keeps a
                        * value in a call-clobbered register across a call to it (patch_x86.c) */
    char why[96];      /* why it was refused: "its 3 bytes are fewer than the jump needs" */
};

/* What a function's stub gives at__patch_enter (patch_stubs.c): it lies in the chunk with the
 * stub, and the assembly reads it at these offsets. */
struct at_patch_desc {
    void *wrapper;
    void *original; /* the trampoline: for a call that finds the shadow stack full */
    uint64_t returns;
    void *enter; /* at__patch_enter, which the stub jumps to */
};
#define AT_PATCH_DESC_WRAPPER  0
#define AT_PATCH_DESC_ORIGINAL 8
#define AT_PATCH_DESC_RETURNS  16

/* patch_stubs.c: the common entry the stubs jump to, and its setup (once, before any patch). */
void at__patch_enter(void);
void at__patch_stubs_init(void);
#define AT_PATCH_FRAMES 1024 /* a thread's shadow stack: patched calls nested in one another */
extern uint64_t at__patch_untraced; /* calls nested too deep for a frame: run untraced */

/* Patches p->entry to jump to p->wrapper and builds the trampoline that calls the original.
 * Returns 0, or a negative errno with p->why saying why nothing was changed. Other threads may
 * run meanwhile: no code is ever made non-executable, and the jump is stored in one aligned
 * store where its bytes allow (docs/PATCHING.md, "Other threads"). */
int at__patch_entry(struct at_patch *p);

/* Between these, the functions' pages at__patch_entry writes stay writable (and executable) and
 * get their protection back at the end. */
void at__patch_batch_begin(void);
void at__patch_batch_end(void);

#endif
