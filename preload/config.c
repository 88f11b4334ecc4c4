/* The recorder's settings, all from ACTORTRACE_* environment variables read once at start.
 * A malformed value is reported and replaced by the default; an ACTORTRACE_ variable we do not
 * know is reported too, since it is most likely a misspelling of one we do. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "at_events.h"
#include "config.h"
#include "util.h"

struct at_config at__config = {
    .out_pattern = "actortrace-%p.trace",
    .ring_dir = "/dev/shm",
    .block_kb = 64,
    .buffer_mb = 32,
    .mode = AT_MODE_DROP,
    .zstd_level = 1, /* the writer keeps up best; level 3 saves about 5% of the file */
    .stack_depth = 16,
    .stack_every = 1,
};

static int parse_uint(const char *name, const char *value, unsigned min, unsigned max,
                      unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(value, &end, 10);
    if (errno || end == value || *end || value[0] == '-' || v < min || v > max) {
        at__warn("%s=%s is not a whole number from %u to %u; using %u", name, value, min, max,
                 *out);
        return -EINVAL;
    }
    *out = (unsigned)v;
    return 0;
}

static void load_mode(const char *value)
{
    static const char *const names[] = {"drop", "block", "overwrite"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(value, names[i]) == 0) {
            at__config.mode = i;
            return;
        }
    }
    at__warn("ACTORTRACE_MODE=%s is not drop, block or overwrite; using drop", value);
}

static void load_level(const char *value)
{
    unsigned level = (unsigned)at__config.zstd_level;
    parse_uint("ACTORTRACE_ZSTD_LEVEL", value, 1, 19, &level);
    at__config.zstd_level = (int)level;
}

static void load_encoding(const char *value)
{
    if (strcmp(value, "columns") == 0 || strcmp(value, "predicted") == 0)
        at__config.predicted = value[0] == 'p';
    else
        at__warn("ACTORTRACE_ENCODING=%s is not columns or predicted; using columns", value);
}

static void load_path(const char *name, const char *value, const char **out)
{
    if (value[0] == '\0')
        at__warn("%s is empty; using %s", name, *out);
    else
        *out = value;
}

/* ACTORTRACE_GLIBC: 1 turns on the glibc parking shim (shim/glibc.c). Its wrappers run before
 * the recorder starts (the first event starts it), so the setting is read on first use, not
 * only in at__config_load, and without a lock: sem_post may call it from a signal handler. Racing
 * readers store the same value; the one that stores it first reports a malformed one. */
static int glibc_shim = -1; /* -1 until read; atomic, relaxed */

int at__config_glibc(void)
{
    /* relaxed: pairs with the CAS below only in value (racing readers store the same one) */
    int on = __atomic_load_n(&glibc_shim, __ATOMIC_RELAXED);
    if (on >= 0)
        return on;
    const char *v = getenv("ACTORTRACE_GLIBC");
    int bad = v && ((v[0] != '0' && v[0] != '1') || v[1] != '\0');
    int value = v && !bad ? v[0] - '0' : 0;
    int expected = -1;
    /* relaxed: the first reader to decide reports a bad value; nothing else is published */
    if (__atomic_compare_exchange_n(&glibc_shim, &expected, value, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED) &&
        bad)
        at__warn("ACTORTRACE_GLIBC=%s is not 0 or 1; using 0", v);
    /* relaxed: the value the CAS above (ours or another reader's) stored */
    return __atomic_load_n(&glibc_shim, __ATOMIC_RELAXED);
}

static int is_known(const char *var)
{
    static const char *const own[] = {
        "ACTORTRACE_OUT",         "ACTORTRACE_RING_DIR",    "ACTORTRACE_BLOCK_KB",
        "ACTORTRACE_BUFFER_MB",   "ACTORTRACE_MODE",        "ACTORTRACE_ZSTD_LEVEL",
        "ACTORTRACE_GLIBC",       "ACTORTRACE_PATCH",       "ACTORTRACE_STACKS",
        "ACTORTRACE_STACK_DEPTH", "ACTORTRACE_STACK_EVERY", "ACTORTRACE_WRITER_NICE",
        "ACTORTRACE_ENCODING"};
    size_t len = strcspn(var, "=");
#ifdef AT_TEST_HOOKS
    if (strncmp(var, "ACTORTRACE_TEST_", 16) == 0)
        return 1; /* the test copies' hooks (meta.c, writer.c) */
#endif
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strlen(own[i]) == len && strncmp(var, own[i], len) == 0)
            return 1;
    return 0;
}

/* One name of ACTORTRACE_STACKS: a built-in event kind, or "all" for every one. */
static uint64_t stack_kind_bits(const char *name, size_t len)
{
    static const char *const kinds[] = {
#define AT_KIND_NAME(e, str) str,
        AT_EVENT_LIST(AT_KIND_NAME)
#undef AT_KIND_NAME
    };
    if (len == 3 && strncmp(name, "all", 3) == 0)
        return ((1ull << AT_EV_BUILTIN_END) - 1) & ~1ull;
    for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strlen(kinds[i]) == len && strncmp(name, kinds[i], len) == 0)
            return 1ull << (i + 1);
    at__warn("ACTORTRACE_STACKS: %.*s is not an event kind; ignored", (int)len, name);
    return 0;
}

void at__config_stacks(void)
{
    const char *v = getenv("ACTORTRACE_STACKS");
    for (; v && *v; v += *v == ',') {
        size_t len = strcspn(v, ",");
        if (len)
            at__config.stack_kinds |= stack_kind_bits(v, len);
        v += len;
    }
    if ((v = getenv("ACTORTRACE_STACK_DEPTH")))
        parse_uint("ACTORTRACE_STACK_DEPTH", v, 1, AT_STACK_DEPTH_MAX, &at__config.stack_depth);
    if ((v = getenv("ACTORTRACE_STACK_EVERY")))
        parse_uint("ACTORTRACE_STACK_EVERY", v, 1, 1u << 30, &at__config.stack_every);
}

static void report_unknown(void)
{
    extern char **environ;
    for (char **env = environ; env && *env; env++)
        if (strncmp(*env, "ACTORTRACE_", 11) == 0 && !is_known(*env))
            at__warn("unknown setting %.*s ignored (see the README for the list)",
                     (int)strcspn(*env, "="), *env);
}

void at__config_load(void)
{
    const char *v;
    if ((v = getenv("ACTORTRACE_OUT")))
        load_path("ACTORTRACE_OUT", v, &at__config.out_pattern);
    if ((v = getenv("ACTORTRACE_RING_DIR")))
        load_path("ACTORTRACE_RING_DIR", v, &at__config.ring_dir);
    if ((v = getenv("ACTORTRACE_BLOCK_KB")))
        parse_uint("ACTORTRACE_BLOCK_KB", v, 4, 4096, &at__config.block_kb);
    if ((v = getenv("ACTORTRACE_BUFFER_MB")))
        parse_uint("ACTORTRACE_BUFFER_MB", v, 1, 65536, &at__config.buffer_mb);
    if ((v = getenv("ACTORTRACE_MODE")))
        load_mode(v);
    if ((v = getenv("ACTORTRACE_ZSTD_LEVEL")))
        load_level(v);
    if ((v = getenv("ACTORTRACE_ENCODING")))
        load_encoding(v);
    if ((v = getenv("ACTORTRACE_WRITER_NICE")))
        parse_uint("ACTORTRACE_WRITER_NICE", v, 0, 19, &at__config.writer_nice);
    at__config_glibc(); /* read here too, so a malformed value is reported in any case */
    report_unknown();
}
