/* Finding the real functions behind our wrappers. dlsym(RTLD_NEXT) is resolved outside the hot
 * path, once per symbol; a symbol that is missing is reported once, and the wrapper that asked
 * is expected to cope (the runtime it wraps is not loaded, or is a version we do not know). */
#include <dlfcn.h>

#include "at_vectors.h"
#include "util.h"

static void *report_missing(const char *symbol, const char *version)
{
    const char *why = dlerror();
    at__warn("cannot find %s%s%s (%s)", symbol, version ? "@" : "", version ? version : "",
             why ? why : "no such symbol");
    return NULL;
}

static void *resolve(const char *symbol, const char *version)
{
    void *real = version ? dlvsym(RTLD_NEXT, symbol, version) : dlsym(RTLD_NEXT, symbol);
    return real ? real : report_missing(symbol, version);
}

/* Called from the shims' wrappers: the caller's vector registers are kept (at_vectors.h). */
AT_GENERAL_REGS_ONLY void *at_resolve(const char *symbol)
{
    void *real;
    AT_VECTORS_KEPT(real = resolve(symbol, NULL));
    return real;
}

AT_GENERAL_REGS_ONLY void *at_resolve_versioned(const char *symbol, const char *version)
{
    void *real;
    AT_VECTORS_KEPT(real = resolve(symbol, version));
    return real;
}
