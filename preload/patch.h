/* Entry patching (patch_x86.c), used by patch.c and its unit test. */
#ifndef AT_PATCH_H
#define AT_PATCH_H

#include <stddef.h>
#include <stdint.h>

/* One function to patch. The caller fills entry, size, wrapper and prot; at__patch_entry sets
 * trampoline, or why. */
struct at_patch {
    uintptr_t entry;  /* the function's first byte */
    size_t size;      /* its length, from the symbol table */
    void *wrapper;    /* where calls to it go once patched */
    int prot;         /* the protection of its pages, restored after the write */
    void *trampoline; /* runs the displaced instructions and jumps back into the function */
    char why[96];     /* why it was refused: "its 3 bytes are fewer than the jump needs" */
};

/* Patches p->entry to jump to p->wrapper and builds the trampoline that calls the original.
 * Returns 0, or a negative errno with p->why saying why nothing was changed. Call only while no
 * other thread can run the function. */
int at__patch_entry(struct at_patch *p);

/* Between these, the pages at__patch_entry writes stay writable (never executable) and get their
 * protection back at the end: only while no other thread runs, and while no code in those pages
 * runs (the functions patched, and what the patching calls, must be in different pages). */
void at__patch_batch_begin(void);
void at__patch_batch_end(void);

#endif
