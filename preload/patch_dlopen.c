/* Objects dlopen loads are patched before it returns (patch.c). Other threads run meanwhile,
 * but none can be running the new object's code yet, unless its own constructors started them.
 *
 * Only in a library whose shims declare patchable functions (the Makefile leaves this file out
 * of the product, whose shims declare none): glibc's dlopen searches the calling object's
 * DT_RUNPATH and expands $ORIGIN from it, and behind this wrapper the caller is this library,
 * so a program that finds its plugins by its own run path would not find them. */
#include <dlfcn.h>

#include "recorder.h"

static void *(*real_dlopen)(const char *, int);

AT_EXPORT void *dlopen(const char *file, int mode)
{
    AT_RESOLVE(real_dlopen, "dlopen");
    void *handle = real_dlopen ? real_dlopen(file, mode) : NULL;
    if (handle)
        at__patch_new_objects();
    return handle;
}
