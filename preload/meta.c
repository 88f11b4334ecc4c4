/* Metadata records (names, threads, clock samples, losses) waiting for the writer. Any thread
 * appends under one mutex; the writer takes the whole batch and writes it as one META frame
 * before the event blocks it drains next, so a name is in the file before events that use it.
 * Every caller runs outside the hot path and outside signal handlers (record.c). The writer
 * copies the records out and frees nothing, and waits for the lock only so long. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "at_codec.h"
#include "at_vectors.h"
#include "meta.h"
#include "ring.h"

/* A growing run of encoded records. */
struct records {
    uint8_t *data;
    size_t len, cap;
    uint32_t count;
};

static pthread_mutex_t meta_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct records pending;   /* guarded by meta_mutex: for the writer's next META frame */
static struct records names_log; /* guarded by meta_mutex: every NAME and PATCH record, for a
                                  * forked child's trace */
uint64_t at__names_lost;

static char *paths[256]; /* guarded by meta_mutex; index 0 unused */
static char *kinds[256];

void at__meta_lock(void)
{
    pthread_mutex_lock(&meta_mutex);
}

void at__meta_unlock(void)
{
    pthread_mutex_unlock(&meta_mutex);
}

static int reserve(struct records *r, size_t more)
{
    if (r->len + more <= r->cap)
        return 0;
    if (r->len + more > AT_META_MAX_PENDING)
        return -ENOSPC;
    size_t cap = r->cap ? r->cap * 2 : 4096;
    while (cap < r->len + more)
        cap *= 2;
    uint8_t *grown = realloc(r->data, cap);
    if (!grown)
        return -ENOMEM;
    r->data = grown;
    r->cap = cap;
    return 0;
}

static int copy_record(struct records *r, const uint8_t *record, size_t len)
{
    AT_RETURN_IF_ERROR(reserve(r, len));
    memcpy(r->data + r->len, record, len);
    r->len += len;
    r->count++;
    return 0;
}

/* Encodes one record at out: `n` varint fields, then `nstr` strings (varint length, bytes);
 * returns its length. */
static size_t encode(uint8_t *out, unsigned type, const uint64_t *fields, unsigned n,
                     const char *const *strs, unsigned nstr)
{
    uint8_t numbers[8 * AT_VARINT_MAX], scratch[AT_VARINT_MAX];
    size_t numbers_len = 0, body_len;
    for (unsigned i = 0; i < n; i++)
        numbers_len += at_varint_put(numbers + numbers_len, fields[i]);
    body_len = numbers_len;
    for (unsigned i = 0; i < nstr; i++)
        body_len += at_varint_put(scratch, strlen(strs[i])) + strlen(strs[i]);
    uint8_t *p = out;
    *p++ = (uint8_t)type;
    p += at_varint_put(p, body_len);
    memcpy(p, numbers, numbers_len);
    p += numbers_len;
    for (unsigned i = 0; i < nstr; i++) {
        size_t len = strlen(strs[i]);
        p += at_varint_put(p, len);
        memcpy(p, strs[i], len);
        p += len;
    }
    return (size_t)(p - out);
}

static int append(unsigned type, const uint64_t *fields, unsigned n, const char *const *strs,
                  unsigned nstr)
{
    size_t bound = 1 + AT_VARINT_MAX + (n + nstr) * AT_VARINT_MAX;
    for (unsigned i = 0; i < nstr; i++)
        bound += strlen(strs[i]);
    pthread_mutex_lock(&meta_mutex);
    int err = reserve(&pending, bound);
    if (err == 0) {
        size_t len = encode(pending.data + pending.len, type, fields, n, strs, nstr);
        if (type == AT_META_NAME || type == AT_META_PATCH)
            copy_record(&names_log, pending.data + pending.len, len);
        pending.len += len;
        pending.count++;
    }
    pthread_mutex_unlock(&meta_mutex);
    return err;
}

/* The queue keeps its memory: the writer copies out and never frees, since a free by the
 * writer could wait for the lock of malloc's arena, which a thread that a fatal signal stopped
 * may hold for good. */
long at__meta_take(uint8_t *out, uint32_t *count, uint64_t timeout_ns)
{
    struct timespec until = at__monotonic_after(timeout_ns);
    if (timeout_ns == AT_WAIT_FOREVER)
        pthread_mutex_lock(&meta_mutex);
    else if (pthread_mutex_clocklock(&meta_mutex, CLOCK_MONOTONIC, &until) != 0)
        return -ETIMEDOUT;
    size_t len = pending.len;
    if (len)
        memcpy(out, pending.data, len);
    *count = pending.count;
    pending.len = 0;
    pending.count = 0;
    pthread_mutex_unlock(&meta_mutex);
    return (long)len;
}

int at__meta_append_raw(const uint8_t *record, size_t len, uint64_t timeout_ns, int may_allocate)
{
    struct timespec until = at__monotonic_after(timeout_ns);
    if (pthread_mutex_clocklock(&meta_mutex, CLOCK_MONOTONIC, &until) != 0)
        return -ETIMEDOUT;
    int err = may_allocate || pending.len + len <= pending.cap ? copy_record(&pending, record, len)
                                                               : -ENOSPC;
    pthread_mutex_unlock(&meta_mutex);
    return err;
}

size_t at__meta_encode(uint8_t *out, unsigned type, const uint64_t *fields, unsigned n)
{
    return encode(out, type, fields, n, NULL, 0);
}

void at__meta_after_fork(void)
{
    free(pending.data);
    pending = (struct records){0};
    if (names_log.len && copy_record(&pending, names_log.data, names_log.len) == 0)
        pending.count = names_log.count;
}

int at__meta_thread(uint32_t tid, uint64_t tsc, const char *name)
{
    uint64_t f[] = {tid, tsc};
    return append(AT_META_THREAD, f, 2, &name, 1);
}

int at__meta_thread_exit(uint32_t tid, uint64_t tsc)
{
    uint64_t f[] = {tid, tsc};
    return append(AT_META_THREAD_EXIT, f, 2, NULL, 0);
}

int at__meta_lost(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                  uint64_t last_tsc)
{
    uint64_t f[] = {tid, reason, count, first_tsc, last_tsc};
    return append(AT_META_LOST, f, 5, NULL, 0);
}

void at__meta_flush_losses(void)
{
    struct at_lost lost[AT_OVERWRITTEN_THREADS];
    unsigned n = at__losses_take(lost, AT_OVERWRITTEN_THREADS, AT_WAIT_FOREVER);
    for (unsigned i = 0; i < n; i++)
        at__meta_lost(lost[i].tid, AT_LOST_OVERWRITTEN, lost[i].count, lost[i].first_tsc,
                      lost[i].last_tsc);
}

int at__meta_lost_nowait(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                         uint64_t last_tsc)
{
    uint64_t f[] = {tid, reason, count, first_tsc, last_tsc};
    uint8_t record[1 + (5 + 1) * AT_VARINT_MAX];
    return at__meta_append_raw(record, at__meta_encode(record, AT_META_LOST, f, 5), 0, 0);
}

#ifdef AT_TEST_HOOKS
/* The test copy only (tests/e2e/clocks.sh): ACTORTRACE_TEST_HOST=BOOT_ID,MONO_NS,REAL_NS makes
 * the process look like one of another host, with that boot id and its clocks shifted by those
 * (signed) nanoseconds. */
static void test_host(const char **boot_id, int64_t *mono, int64_t *real)
{
    static char id[64];
    const char *v = getenv("ACTORTRACE_TEST_HOST");
    const char *comma = v ? strchr(v, ',') : NULL;
    if (!comma || (size_t)(comma - v) >= sizeof id)
        return;
    memcpy(id, v, (size_t)(comma - v));
    id[comma - v] = '\0';
    char *end;
    *mono = strtoll(comma + 1, &end, 10);
    *real = *end == ',' ? strtoll(end + 1, NULL, 10) : 0;
    *boot_id = id;
}
#else
static void test_host(const char **boot_id, int64_t *mono, int64_t *real)
{
    (void)boot_id, (void)mono, (void)real;
}
#endif

/* The monotonic read sits between two tsc reads and is paired with their midpoint. */
void at__meta_clock_fields(uint64_t fields[3])
{
    const char *boot_id = NULL;
    int64_t mono_shift = 0, real_shift = 0;
    test_host(&boot_id, &mono_shift, &real_shift);
    uint64_t before = at__rdtsc();
    uint64_t mono = at__clock_ns(CLOCK_MONOTONIC);
    uint64_t after = at__rdtsc();
    fields[0] = before + (after - before) / 2;
    fields[1] = mono + (uint64_t)mono_shift;
    fields[2] = at__clock_ns(CLOCK_REALTIME) + (uint64_t)real_shift;
    at__ring_note_clock(fields[0], fields[1], fields[2]);
}

int at__meta_clock(void)
{
    uint64_t f[3];
    at__meta_clock_fields(f);
    return append(AT_META_CLOCK, f, 3, NULL, 0);
}

/* The kernel's id of this boot, which tells the decoder whether two traces share one
 * CLOCK_MONOTONIC; "" when unreadable. */
static void read_boot_id(char *id, size_t size)
{
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, id, size - 1) : -1;
    if (fd >= 0)
        close(fd);
    id[n > 0 ? n : 0] = '\0';
    id[strcspn(id, "\n")] = '\0';
}

int at__meta_process(const char *ring_path)
{
    char exe[4096], boot_id[64], host[256] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    read_boot_id(boot_id, sizeof boot_id);
    gethostname(host, sizeof host - 1);
    const char *boot = boot_id;
    int64_t mono_shift, real_shift;
    test_host(&boot, &mono_shift, &real_shift);
    uint64_t f[] = {(uint64_t)getpid(), (uint64_t)getppid(), at__ring.capacity, at__config.mode};
    const char *strs[] = {exe, ring_path, boot, host};
    return append(AT_META_PROCESS, f, 4, strs, 4);
}

int at__meta_patch(unsigned status, const char *symbol, const char *object, const char *why)
{
    uint64_t f[] = {status};
    const char *strs[] = {symbol, object, why};
    return append(AT_META_PATCH, f, 1, strs, 3);
}

/* ---- Names (the public API of actortrace.h) ---- */

static int name_record(unsigned space, uint64_t id, const char *name)
{
    uint64_t f[] = {space, id};
    int err = append(AT_META_NAME, f, 2, &name, 1);
    if (err < 0)
        /* relaxed: a total, read once by the writer at the end */
        __atomic_fetch_add(&at__names_lost, 1, __ATOMIC_RELAXED);
    return err;
}

/* The API the shims' wrappers call keeps the caller's vector registers (at_vectors.h). */
AT_GENERAL_REGS_ONLY int at_name_msg(uint32_t id, const char *name)
{
    int err;
    AT_VECTORS_KEPT(err = name_record(AT_NAME_MSG, id, name));
    return err;
}

AT_GENERAL_REGS_ONLY int at_name_actor(uint64_t actor, const char *name)
{
    int err;
    AT_VECTORS_KEPT(err = name_record(AT_NAME_ACTOR, actor, name));
    return err;
}

/* Looks name up in table[first..255], adding it if absent; returns its index or 0. */
static unsigned intern(char **table, unsigned first, unsigned space, const char *name)
{
    unsigned found = 0;
    pthread_mutex_lock(&meta_mutex);
    for (unsigned i = first; i < 256 && !found; i++) {
        if (table[i] == NULL) {
            table[i] = strdup(name);
            found = table[i] ? i : 0;
            break;
        }
        if (strcmp(table[i], name) == 0) {
            pthread_mutex_unlock(&meta_mutex);
            return i;
        }
    }
    pthread_mutex_unlock(&meta_mutex);
    if (found)
        name_record(space, found, name);
    return found;
}

AT_GENERAL_REGS_ONLY unsigned at_path_register(const char *name)
{
    unsigned id;
    AT_VECTORS_KEPT(id = intern(paths, 1, AT_NAME_PATH, name));
    return id;
}

AT_GENERAL_REGS_ONLY unsigned at_event_register(const char *name)
{
    unsigned id;
    AT_VECTORS_KEPT(id = intern(kinds, AT_EV_FIRST_REGISTERED, AT_NAME_EVENT, name));
    return id;
}
