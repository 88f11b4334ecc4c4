/* Recovery after a kill (docs/FORMAT.md section 7). The recorder keeps its blocks in a shared
 * file mapping, so when a process dies without finishing its trace (SIGKILL, the OOM killer, a
 * fault on an exhausted stack), the events its threads had committed and the writer had not yet
 * written are still in that file. Each block there that is being filled, is full, or is being
 * written holds such events, unless the trace already has a frame with the block's thread and
 * seq (the writer wrote it just before the end). Those blocks are encoded into columns the way
 * the writer would and added to their threads as frames marked recovered; the merge then reads
 * them like any other. The ring's header adds the losses the trace does not list (their LOST
 * records were still in memory) and clock samples, when the trace has fewer than two.
 *
 * A ring is read only when its process is gone: a process with the recorded pid must also have
 * the recorded start time to count as the same one (a container's pid 1 decoded on the host is
 * not the host's init). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "at_codec.h"
#include "order.h"
#include "trace.h"

#define MAX_BLOCK_SIZE (64u << 20)

struct ring {
    const uint8_t *data;
    size_t size;
    const struct at_ring_header *header;
};

/* The fields of a /proc stat file (PATH) after the name, from field 3 on, into BUF; NULL when
 * unreadable. The name, field 2, is in parentheses and may hold spaces and parentheses. */
static const char *stat_fields(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

/* Field 22 of /proc/PID/stat, the start time in clock ticks after boot; 0 when unknown. */
static uint64_t start_ticks(uint64_t pid)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    const char *p = stat_fields(path, stat, sizeof stat);
    for (int field = 3; p && field < 22; field++)
        p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
    return p ? strtoull(p, NULL, 10) : 0;
}

/* Whether a thread of process pid still runs. A killed process that its parent has not reaped
 * yet (a zombie) has its first thread left, in state Z (or X), and no other; a process whose
 * first thread left by pthread_exit has that one in state Z too, beside threads that run.
 * Unreadable: taken as running. */
static bool has_live_thread(uint64_t pid)
{
    char path[96], stat[1024];
    snprintf(path, sizeof path, "/proc/%llu/task", (unsigned long long)pid);
    DIR *tasks = opendir(path);
    bool live = tasks == NULL;
    for (struct dirent *e; !live && tasks && (e = readdir(tasks));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%llu/task/%.20s/stat", (unsigned long long)pid,
                 e->d_name);
        const char *state = stat_fields(path, stat, sizeof stat);
        live = state && *state != 'Z' && *state != 'X';
    }
    if (tasks)
        closedir(tasks);
    return live;
}

bool at__process_running(uint64_t pid, uint64_t started)
{
    if (pid == 0 || pid > INT32_MAX || (kill((pid_t)pid, 0) < 0 && errno != EPERM))
        return false;
    uint64_t now = start_ticks(pid);
    return (started == 0 || now == 0 || now == started) && has_live_thread(pid);
}

/* Why the ring file cannot be used, or NULL. */
static const char *check_ring(const struct ring *r, uint64_t pid)
{
    const struct at_ring_header *h = r->header;
    if (r->size < sizeof *h || memcmp(h->magic, AT_RING_MAGIC, sizeof h->magic) != 0)
        return "it is not a ring file";
    if (h->pid != pid)
        return "it belongs to another process";
    if (h->block_size < sizeof(struct at_ring_block) + sizeof(struct at_event) ||
        h->block_size > MAX_BLOCK_SIZE || h->block_count > (r->size - sizeof *h) / h->block_size)
        return "its header does not match its size";
    return NULL;
}

/* Whether the trace has a frame of this block ending at or after from_tsc (0: any frame): a
 * block dumped while filling (overwrite mode) is in the trace in pieces. */
static bool in_trace(const struct trace *t, uint32_t tid, uint32_t seq, uint64_t from_tsc)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct thread *th = &t->threads[i];
        for (size_t j = 0; th->tid == tid && j < th->nframes; j++)
            if (th->frames[j].seq == seq && !th->frames[j].recovered &&
                th->frames[j].last_tsc >= from_tsc)
                return true;
    }
    return false;
}

/* The slots a block's owner had taken: all it handed over, or up to the last committed one of
 * a block it was still filling. */
static uint32_t slots_used(const struct at_ring_block *b, const struct at_event *slots,
                           uint32_t capacity)
{
    if (b->state != AT_BLOCK_FILLING)
        return b->used < capacity ? b->used : capacity;
    uint32_t used = capacity;
    while (used > 0 && slots[used - 1].kind == 0)
        used--;
    return used;
}

static int grow(struct trace *t, size_t more)
{
    size_t need = t->recovered_len + more;
    return need <= t->recovered_cap
               ? 0
               : at__array_grow((void **)&t->recovered, &t->recovered_cap, need - 1, 1, 1 << 20);
}

static int add_frame(struct trace *t, const struct at_ring_block *b, size_t offset, size_t len,
                     const struct at_block_info *info)
{
    struct thread *th = at__trace_thread(t, b->tid);
    struct frame_ref f = {
        .offset = offset,
        .first_tsc = info->first_tsc,
        .last_tsc = info->last_tsc,
        .seq = b->seq,
        .count = info->count,
        .payload_size = (uint32_t)len,
        .raw_size = (uint32_t)len,
        .part_size = (uint32_t)len,
        .encoding = AT_ENC_RAW,
        .recovered = true,
    };
    if (!th || at__thread_add_frame(th, &f) < 0)
        return -ENOMEM;
    t->recovered_events += info->count;
    return 0;
}

static int recover_block(struct trace *t, const struct at_ring_block *b, uint32_t capacity)
{
    if (b->state != AT_BLOCK_FILLING && b->state != AT_BLOCK_FULL && b->state != AT_BLOCK_WRITING)
        return 0;
    const struct at_event *slots = (const struct at_event *)(b + 1);
    uint32_t used = slots_used(b, slots, capacity);
    uint32_t from = b->written < used ? b->written : used; /* the rest is in the trace */
    if (b->tid == 0 || used == from || in_trace(t, b->tid, b->seq, from ? slots[from].tsc | 1 : 0))
        return 0;
    if (grow(t, at_events_encode_bound(used - from)) < 0)
        return -ENOMEM;
    struct at_block_info info;
    size_t offset = t->recovered_len;
    size_t len = at_events_encode(slots + from, used - from, t->recovered + offset, &info, NULL);
    if (info.count == 0)
        return 0;
    t->recovered_len += len;
    return add_frame(t, b, offset, len, &info);
}

static int by_seq(const void *a, const void *b)
{
    const struct frame_ref *x = a, *y = b;
    return at__order(x->seq, y->seq);
}

static int recover_ring(struct trace *t, const struct ring *r)
{
    const struct at_ring_header *h = r->header;
    uint32_t capacity = (h->block_size - sizeof(struct at_ring_block)) / sizeof(struct at_event);
    const uint8_t *blocks = r->data + sizeof *h;
    for (uint32_t i = 0; i < h->block_count; i++) {
        int err = recover_block(t, (const void *)(blocks + (size_t)i * h->block_size), capacity);
        if (err < 0)
            return err;
    }
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].nframes > 1)
            qsort(t->threads[i].frames, t->threads[i].nframes, sizeof(struct frame_ref), by_seq);
    return 0;
}

/* The losses the ring counted beyond those the trace lists, one entry per reason, over the
 * time the recovered events span. */
static void add_ring_losses(struct trace *t, const struct at_ring_header *h)
{
    static const uint8_t reasons[] = {AT_LOST_DROPPED, AT_LOST_OVERWRITTEN};
    uint64_t first = h->clock[0].tsc, last = first;
    for (size_t i = 0; i < t->nthreads; i++)
        for (size_t j = 0; j < t->threads[i].nframes; j++)
            if (t->threads[i].frames[j].last_tsc > last)
                last = t->threads[i].frames[j].last_tsc;
    for (size_t r = 0; r < sizeof reasons; r++) {
        uint64_t listed = 0;
        for (size_t j = 0; j < t->nlost; j++)
            listed += t->lost[j].reason == reasons[r] ? t->lost[j].count : 0;
        if (h->lost[reasons[r]] > listed)
            t->ring_lost[t->nring_lost++] = (struct lost){.reason = reasons[r],
                                                          .count = h->lost[reasons[r]] - listed,
                                                          .first_tsc = first,
                                                          .last_tsc = last};
    }
}

/* Appends the ring's lost counts to the trace's list. Returns 0 or -ENOMEM. */
static int list_ring_losses(struct trace *t)
{
    if (t->nring_lost == 0)
        return 0;
    struct lost *grown = realloc(t->lost, (t->nlost + t->nring_lost) * sizeof *grown);
    if (!grown)
        return -ENOMEM;
    t->lost = grown;
    for (size_t i = 0; i < t->nring_lost; i++)
        t->lost[t->nlost++] = t->ring_lost[i];
    t->lost_cap = t->nlost;
    return 0;
}

/* With fewer than two samples the decoder would take ticks for nanoseconds: the ring's first
 * and latest samples join the trace's. Returns 0 or -ENOMEM. */
static int add_ring_clock(struct trace *t, const struct at_ring_header *h)
{
    if (t->clock.n >= 2)
        return 0;
    struct clock_sample all[3];
    size_t n = 0;
    if (t->clock.n == 1)
        all[n++] = t->clock.samples[0];
    for (int i = 0; i < 2; i++) {
        const struct at_ring_clock *c = &h->clock[i];
        if (c->tsc == 0 || (n > 0 && all[0].tsc == c->tsc))
            continue;
        all[n++] = t->ring_clock[t->nring_clock++] =
            (struct clock_sample){c->tsc, c->mono_ns, c->real_ns};
    }
    if (t->nring_clock == 0)
        return 0;
    at__trace_warn(t, "%zu clock samples from the ring file convert its timestamps",
                   t->nring_clock);
    at__clock_free(&t->clock);
    return at__clock_init(&t->clock, all, n);
}

static void report(const struct trace *t, const char *path)
{
    if (t->recovered_events == 0) {
        at__trace_warn(t, "the ring file %s holds no events beyond the trace", path);
        return;
    }
    uint64_t last = 0;
    for (size_t i = 0; i < t->nthreads; i++)
        for (size_t j = 0; j < t->threads[i].nframes; j++)
            if (t->threads[i].frames[j].recovered && t->threads[i].frames[j].last_tsc > last)
                last = t->threads[i].frames[j].last_tsc;
    size_t hint = 0;
    at__trace_warn(t, "recovered %llu events from the ring file %s, up to ts_ns %llu",
                   (unsigned long long)t->recovered_events, path,
                   (unsigned long long)at__clock_ns(&t->clock, last, &hint));
}

/* Why the ring file open as fd cannot be read, or NULL; fills *st. */
static const char *unreadable(int fd, struct stat *st)
{
    if (fd < 0 || fstat(fd, st) < 0)
        return strerror(errno);
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    return st->st_size > 0 ? NULL : "it is empty";
}

/* Reads the mapped ring r into t. Returns 0 or -ENOMEM. */
static int read_ring(struct trace *t, const struct ring *r, const char *path, bool force)
{
    const struct at_ring_header *h = r->header;
    if (!force && at__process_running(t->process.pid, h->start_ticks)) {
        at__trace_warn(t,
                       "process %llu is still running: its trace is not finished yet "
                       "(--force-recover reads its ring file all the same)",
                       (unsigned long long)t->process.pid);
        return 0;
    }
    int err = recover_ring(t, r);
    if (err == 0) {
        add_ring_losses(t, h);
        err = list_ring_losses(t);
    }
    if (err == 0)
        err = add_ring_clock(t, h);
    if (err == 0) {
        t->ring_read = true;
        report(t, path);
    }
    return err;
}

int at__trace_recover(struct trace *t, bool force)
{
    const char *path = t->process.ring_path;
    if (t->end.seen || t->ring_written || !t->process.known || !path || !*path)
        return 0;
    /* O_NONBLOCK: the path comes from the trace, and opening a FIFO would wait for a writer */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    const char *why = unreadable(fd, &st);
    if (why) {
        at__trace_warn(t,
                       "the ring file %s cannot be read (%s): the events not yet written "
                       "when the process ended are lost",
                       path, why);
        if (fd >= 0)
            close(fd);
        return 0;
    }
    struct ring r = {.size = (size_t)st.st_size};
    void *map = mmap(NULL, r.size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return errno == ENOMEM ? -ENOMEM : 0;
    r.data = map;
    r.header = map;
    int err = 0;
    why = check_ring(&r, t->process.pid);
    if (why)
        at__trace_warn(t, "not recovering from %s: %s", path, why);
    else
        err = read_ring(t, &r, path, force);
    munmap(map, r.size);
    return err;
}
