/* What the runtimes' shims of shim/ share, so that each is one shape: its real functions in one
 * table, resolved by support.c; its version guard; its registered path and kind names; its
 * warnings. Private to the library (the installed API is include/actortrace.h).
 *
 * A shim's setup reads, top to bottom:
 *
 *     AT_REAL(rt_send);                      real_rt_send, typed from rt_send's declaration
 *     static struct at_shim shim = {
 *         .reals = AT_SHIM_REALS(AT_SHIM_REAL(rt_send), ...),
 *         .runtime = "refrt",            for warnings
 *         .check = check,                optional: the version guard
 *     };
 *
 * and each wrapper either resolves its own real function on first use,
 * AT_SHIM_RESOLVE(&shim, real_rt_send) (the cost of AT_RESOLVE: one load and a branch), or, in
 * a shim with a guard, asks at_shim_on(&shim), which on its first call resolves every real
 * function and runs the guard (one load and a branch after that). */
#ifndef AT_SHIM_SUPPORT_H
#define AT_SHIM_SUPPORT_H

#include <stddef.h>

#include "actortrace.h"

/* One line on stderr, prefixed "actortrace: " (preload/util.c). */
void at__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ===== The real functions ================================================================= */

/* Declares real_<symbol>, a pointer of the type of symbol's declaration: the runtime's header
 * where it installs one (czmq.h, refrt.h, the C library's), else the shim's own prototypes,
 * written once at its top. A wrapper defined under the symbol's name is checked against the
 * same declaration. */
#define AT_REAL(symbol)          static __typeof__(symbol) *real_##symbol
#define AT_REAL_AS(real, symbol) static __typeof__(symbol) *real

struct at_shim_real {
    void **real;
    const char *symbol;
    const char *version; /* for dlvsym; NULL: the default version */
};
#define AT_SHIM_REAL(symbol)                                                                       \
    {                                                                                              \
        (void **)&real_##symbol, #symbol, NULL                                                     \
    }
#define AT_SHIM_REAL_AS(real, symbol)                                                              \
    {                                                                                              \
        (void **)&(real), symbol, NULL                                                             \
    }
#define AT_SHIM_REAL_VERSION(symbol, version)                                                      \
    {                                                                                              \
        (void **)&real_##symbol, #symbol, version                                                  \
    }
#define AT_SHIM_REALS(...)                                                                         \
    (const struct at_shim_real[])                                                                  \
    {                                                                                              \
        __VA_ARGS__,                                                                               \
        {                                                                                          \
            NULL, NULL, NULL                                                                       \
        }                                                                                          \
    }

enum at_shim_state { AT_SHIM_UNCHECKED, AT_SHIM_TRACED, AT_SHIM_UNTRACED };

struct at_shim {
    const struct at_shim_real *reals; /* ends with an entry whose real is NULL */
    const char *runtime;              /* names the shim in its warnings: "aether" */
    const char *expected;             /* what a missing symbol says it is not: "Aether's runtime" */
    /* The version guard, run once the reals are resolved: 0 when the runtime is the one the
     * shim knows, else nonzero with why[] saying why not. NULL: no guard. */
    int (*check)(char *why, size_t size);
    /* Run before the shim first records, by each thread that gets there (so idempotent);
     * NULL: nothing to do. */
    void (*start)(void);
    /* The warning when the shim turns itself off, a format taking why; NULL: "RUNTIME: WHY;
     * its calls are forwarded untraced (docs/shims/RUNTIME.md)". */
    const char *untraced;
    int all_required; /* a real function missing means another runtime: untraced, and the
                       * guard is not run */
    int state;        /* enum at_shim_state; stored with release once the reals are set */
};

/* Resolves the real function of the entry whose pointer is *real, on the first call of its
 * wrapper; keeps a trampoline that entry patching set. A missing symbol is said on stderr, as
 * at_resolve does. */
#define AT_SHIM_RESOLVE(shim, real)                                                                \
    do {                                                                                           \
        if (AT_UNLIKELY((real) == NULL))                                                           \
            *(void **)&(real) = at__shim_resolve((shim), (void **)&(real));                        \
    } while (0)
void *at__shim_resolve(const struct at_shim *shim, void **real);

/* The first call: resolves every real function (quietly: a missing one is the guard's
 * answer), runs the guard, and says on stderr when the shim is off. Returns the state. */
int at__shim_setup(struct at_shim *shim);

/* 1 when the shim records, 0 when its wrappers only forward; the real functions are resolved
 * either way (those that exist). Thread-safe: racing threads check the same things. */
static inline int at_shim_on(struct at_shim *shim)
{
    /* acquire: pairs with at__shim_setup's release store, after the reals are set */
    int state = __atomic_load_n(&shim->state, __ATOMIC_ACQUIRE);
    if (AT_LIKELY(state == AT_SHIM_TRACED))
        return 1;
    return state == AT_SHIM_UNCHECKED && at__shim_setup(shim) == AT_SHIM_TRACED;
}

/* Turns the shim off after a later check failed (a layout seen only at run time); says why,
 * once. */
void at_shim_off(struct at_shim *shim, const char *why);

/* ===== Registered paths and kinds =========================================================
 * A shim names its paths and extra event kinds in one table; each is registered on first use
 * (registration is idempotent, so threads racing there store the same id). */

struct at_shim_labels {
    const char *const *names;
    unsigned first_kind; /* names[first_kind] and after are event kinds, those before paths */
    unsigned *ids;       /* one per name, 0 until first use; atomic, relaxed */
};

unsigned at__shim_label_register(const struct at_shim_labels *labels, unsigned which);

static inline unsigned at_shim_label(const struct at_shim_labels *labels, unsigned which)
{
    /* relaxed: pairs with the registering store only in value (registration is idempotent) */
    unsigned id = __atomic_load_n(&labels->ids[which], __ATOMIC_RELAXED);
    if (AT_UNLIKELY(id == 0))
        id = at__shim_label_register(labels, which);
    return id;
}

/* The recorder's (preload/record.c), for the shims compiled into the library: whether a signal
 * handler runs on this thread, and an event dropped because it could not be recorded safely
 * there, counted as every drop is. */
int at__in_signal_handler(void);
void at__record_drop(void);

/* The label whose id was registered already, without registering: for a signal handler, which
 * must not take the registry's lock. 0 when it was not. */
static inline unsigned at_shim_label_registered(const struct at_shim_labels *labels, unsigned which)
{
    /* relaxed: as at_shim_label */
    return __atomic_load_n(&labels->ids[which], __ATOMIC_RELAXED);
}

#endif
