/* The shims' common setup (support.h): resolving the real functions, the version guard, the
 * registered labels, and the registry of runtimes whose workers park on glibc's condvars
 * (workers.h). Nothing here runs per event. */
/* Called from wrappers that may run behind patched entries, which save no vector register
 * (include/at_vectors.h): general registers only; the C library runs inside AT_VECTORS_KEPT. */
#pragma GCC target("general-regs-only")
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "at_vectors.h"
#include "support.h"
#include "workers.h"

int at__patch_defines(void **real, const char *symbol); /* preload/patch.c */

/* ===== The real functions ================================================================= */

static const struct at_shim_real *entry_of(const struct at_shim *shim, void **real)
{
    const struct at_shim_real *r = shim->reals;
    while (r->real && r->real != real)
        r++;
    return r->real ? r : NULL;
}

/* Returns what the wrapper stores in *real: a trampoline set meanwhile, else what dlsym found. */
void *at__shim_resolve(const struct at_shim *shim, void **real)
{
    const struct at_shim_real *r = entry_of(shim, real);
    if (!r || *real)
        return *real;
    return r->version ? at_resolve_versioned(r->symbol, r->version) : at_resolve(r->symbol);
}

/* 1 when the runtime has the symbol: its pointer is set already (a patched entry's
 * trampoline), dlsym finds it, or, for a shim that needs every function, an object one of the
 * shim's functions was patched in (a program the runtime is linked into, which exports
 * nothing) has it in its symbol table. */
static int present(const struct at_shim *shim, const struct at_shim_real *r)
{
    if (*r->real)
        return 1;
    void *found =
        r->version ? dlvsym(RTLD_NEXT, r->symbol, r->version) : dlsym(RTLD_NEXT, r->symbol);
    if (found) {
        *r->real = found;
        return 1;
    }
    if (!shim->all_required)
        return 0;
    for (const struct at_shim_real *other = shim->reals; other->real; other++)
        if (at__patch_defines(other->real, r->symbol))
            return 1;
    return 0;
}

/* Resolves every real function not set yet; threads racing here store the same pointers.
 * Returns the first symbol missing, or NULL. */
static const char *resolve_all(const struct at_shim *shim)
{
    const char *missing = NULL;
    for (const struct at_shim_real *r = shim->reals; r->real; r++)
        if (!present(shim, r) && !missing)
            missing = r->symbol;
    return missing;
}

static void warn_untraced(const struct at_shim *shim, const char *why)
{
    if (shim->untraced)
        at__warn(shim->untraced, why);
    else
        at__warn("%s: %s; its calls are forwarded untraced (docs/shims/%s.md)", shim->runtime, why,
                 shim->runtime);
}

static int setup(struct at_shim *shim)
{
    char why[160] = "";
    const char *missing = resolve_all(shim);
    int known;
    if (missing && shim->all_required) {
        snprintf(why, sizeof why, "%s is missing, this is not %s", missing, shim->expected);
        known = 0;
    } else {
        known = !shim->check || shim->check(why, sizeof why) == 0;
    }
    if (known && shim->start)
        shim->start();
    int expected = AT_SHIM_UNCHECKED;
    /* release: pairs with at_shim_on's acquire load: the reals above are set. A thread that
     * turned the shim off meanwhile (at_shim_off) wins. */
    if (__atomic_compare_exchange_n(&shim->state, &expected,
                                    known ? AT_SHIM_TRACED : AT_SHIM_UNTRACED, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_ACQUIRE) &&
        !known)
        warn_untraced(shim, why);
    return __atomic_load_n(&shim->state, __ATOMIC_ACQUIRE);
}

/* The C library runs in here: the caller's vector registers are kept. */
int at__shim_setup(struct at_shim *shim)
{
    int state;
    AT_VECTORS_KEPT(state = setup(shim));
    return state;
}

void at_shim_off(struct at_shim *shim, const char *why)
{
    /* release: the reals were set before any wrapper could find the shim on */
    if (__atomic_exchange_n(&shim->state, AT_SHIM_UNTRACED, __ATOMIC_RELEASE) != AT_SHIM_UNTRACED)
        AT_VECTORS_KEPT(warn_untraced(shim, why));
}

/* ===== Registered paths and kinds ========================================================= */

unsigned at__shim_label_register(const struct at_shim_labels *labels, unsigned which)
{
    const char *name = labels->names[which];
    unsigned id = which >= labels->first_kind ? at_event_register(name) : at_path_register(name);
    /* relaxed: the same id whichever thread stores it */
    __atomic_store_n(&labels->ids[which], id, __ATOMIC_RELAXED);
    return id;
}

/* ===== Runtimes whose workers park on condvars ============================================ */

__thread const struct at_workers *at__thread_workers;
void (*at__worker_wakers[AT_WORKER_RUNTIMES])(const void *cond);
unsigned at__worker_waker_count;
static pthread_mutex_t wakers_lock = PTHREAD_MUTEX_INITIALIZER;

/* Adds the runtime's wake hook once; a runtime past AT_WORKER_RUNTIMES is said on stderr and
 * its unparks name no waker. */
static void register_waker(const struct at_workers *workers)
{
    pthread_mutex_lock(&wakers_lock);
    unsigned n = at__worker_waker_count, i = 0;
    while (i < n && at__worker_wakers[i] != workers->wake)
        i++;
    if (i == n && n < AT_WORKER_RUNTIMES) {
        at__worker_wakers[n] = workers->wake;
        /* release: pairs with at_workers_wake's acquire load, after the hook is stored */
        __atomic_store_n(&at__worker_waker_count, n + 1, __ATOMIC_RELEASE);
    } else if (i == n) {
        at__warn("more than %d runtimes with worker threads: the wakers of %s's workers are not "
                 "recorded",
                 AT_WORKER_RUNTIMES, workers->runtime);
    }
    pthread_mutex_unlock(&wakers_lock);
}

void at__workers_wake_all(const void *cond, unsigned count)
{
    for (unsigned i = 0; i < count; i++)
        at__worker_wakers[i](cond);
}

void at_workers_thread(const struct at_workers *workers)
{
    AT_VECTORS_KEPT(register_waker(workers));
    at__thread_workers = workers;
}
