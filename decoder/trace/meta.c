/* Metadata records (docs/FORMAT.md section 5): u8 type, varint body length, body. Each known
 * record is applied to the trace as it is read. Unknown types are skipped and bytes past the
 * known fields of a body ignored, since later minor versions may add both. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_codec.h"
#include "body.h"
#include "stacks.h"
#include "trace.h"

/* The enumerations (mode, space, reason) are varints like every other field. */
static uint8_t small(struct body *b)
{
    uint64_t v = at__body_num(b);
    if (v > UINT8_MAX)
        b->bad = true;
    return (uint8_t)v;
}

static uint32_t num32(struct body *b)
{
    uint64_t v = at__body_num(b);
    if (v > UINT32_MAX)
        b->bad = true;
    return (uint32_t)v;
}

static const uint8_t *str(struct body *b, size_t *len)
{
    uint64_t n = at__body_num(b);
    if (b->bad || n > (uint64_t)(b->end - b->p)) {
        b->bad = true;
        *len = 0;
        return NULL;
    }
    const uint8_t *s = b->p;
    b->p += n;
    *len = (size_t)n;
    return s;
}

static char *copy_string(const uint8_t *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

void at__process_free(struct process *p)
{
    free(p->exe);
    free(p->ring_path);
    free(p->boot_id);
    free(p->host);
}

static int on_process(struct trace *t, struct body *b)
{
    /* One field per statement: the order of initialiser expressions is unspecified. */
    struct process p = {.known = true};
    p.pid = at__body_num(b);
    p.ppid = at__body_num(b);
    p.block_slots = at__body_num(b);
    p.mode = small(b);
    size_t exe_len, ring_len;
    const uint8_t *exe = str(b, &exe_len);
    const uint8_t *ring = str(b, &ring_len);
    if (b->bad)
        return -EINVAL;
    /* boot id and host name: since minor version 2 (absent before, "" when unknown) */
    size_t boot_len = 0, host_len = 0;
    const uint8_t *boot = b->p < b->end ? str(b, &boot_len) : (const uint8_t *)"";
    const uint8_t *host = b->p < b->end ? str(b, &host_len) : (const uint8_t *)"";
    if (b->bad)
        return -EINVAL;
    p.exe = copy_string(exe, exe_len);
    p.ring_path = copy_string(ring, ring_len);
    p.boot_id = copy_string(boot, boot_len);
    p.host = copy_string(host, host_len);
    if (!p.exe || !p.ring_path || !p.boot_id || !p.host) {
        at__process_free(&p);
        return -ENOMEM;
    }
    at__process_free(&t->process);
    t->process = p;
    return 0;
}

static int on_clock(struct trace *t, struct body *b)
{
    struct clock_sample s;
    s.tsc = at__body_num(b);
    s.mono_ns = at__body_num(b);
    s.real_ns = at__body_num(b);
    if (b->bad)
        return -EINVAL;
    if (at__array_grow((void **)&t->samples, &t->samples_cap, t->nsamples, sizeof s, 16) < 0)
        return -ENOMEM;
    t->samples[t->nsamples++] = s;
    return 0;
}

static int on_thread(struct trace *t, struct body *b)
{
    uint32_t tid = num32(b);
    uint64_t tsc = at__body_num(b);
    size_t len;
    const uint8_t *name = str(b, &len);
    if (b->bad)
        return -EINVAL;
    struct thread *th = at__trace_thread(t, tid);
    char *copy = th ? copy_string(name, len) : NULL;
    if (!copy)
        return -ENOMEM;
    free(th->name);
    th->name = copy;
    th->name_len = (uint32_t)len; /* inside a payload: at most 16 MiB */
    if (th->start_tsc == 0 || tsc < th->start_tsc)
        th->start_tsc = tsc;
    return 0;
}

static int on_thread_exit(struct trace *t, struct body *b)
{
    uint32_t tid = num32(b);
    uint64_t tsc = at__body_num(b);
    if (b->bad)
        return -EINVAL;
    struct thread *th = at__trace_thread(t, tid);
    if (!th)
        return -ENOMEM;
    th->exited = true;
    th->exit_tsc = tsc;
    return 0;
}

static int on_name(struct trace *t, struct body *b)
{
    uint8_t space = small(b);
    uint64_t id = at__body_num(b);
    size_t len;
    const uint8_t *name = str(b, &len);
    if (b->bad)
        return -EINVAL;
    return at__names_set(&t->names, space, id, name, len);
}

static int on_lost(struct trace *t, struct body *b)
{
    struct lost l;
    l.tid = num32(b);
    l.reason = small(b);
    l.count = at__body_num(b);
    l.first_tsc = at__body_num(b);
    l.last_tsc = at__body_num(b);
    if (b->bad)
        return -EINVAL;
    if (at__array_grow((void **)&t->lost, &t->lost_cap, t->nlost, sizeof l, 16) < 0)
        return -ENOMEM;
    t->lost[t->nlost++] = l;
    return 0;
}

static int on_end(struct trace *t, struct body *b)
{
    struct end_record e = {.seen = true};
    e.events_written = at__body_num(b);
    e.events_dropped = at__body_num(b);
    e.threads = at__body_num(b);
    e.blocks_written = at__body_num(b);
    if (b->bad)
        return -EINVAL;
    t->end = e;
    return 0;
}

static int on_recovered(struct trace *t, struct body *b)
{
    at__body_num(b);
    if (b->bad)
        return -EINVAL;
    t->ring_written = true;
    return 0;
}

/* The three strings of a PATCH record copied into one allocation. */
static int on_patch(struct trace *t, struct body *b)
{
    struct patch_record r = {.status = small(b)};
    size_t len[3];
    const uint8_t *s[3];
    for (int i = 0; i < 3; i++)
        s[i] = str(b, &len[i]);
    if (b->bad)
        return -EINVAL;
    if (at__array_grow((void **)&t->patches, &t->patches_cap, t->npatches, sizeof r, 16) < 0 ||
        !(r.symbol = malloc(len[0] + len[1] + len[2] + 3)))
        return -ENOMEM;
    r.object = r.symbol + len[0] + 1;
    r.why = r.object + len[1] + 1;
    char *to[3] = {r.symbol, r.object, r.why};
    for (int i = 0; i < 3; i++) {
        memcpy(to[i], s[i], len[i]);
        to[i][len[i]] = '\0';
    }
    t->patches[t->npatches++] = r;
    return 0;
}

static int apply(struct trace *t, uint8_t type, struct body *b)
{
    switch (type) {
    case AT_META_PROCESS:
        return on_process(t, b);
    case AT_META_CLOCK:
        return on_clock(t, b);
    case AT_META_THREAD:
        return on_thread(t, b);
    case AT_META_THREAD_EXIT:
        return on_thread_exit(t, b);
    case AT_META_NAME:
        return on_name(t, b);
    case AT_META_LOST:
        return on_lost(t, b);
    case AT_META_END:
        return on_end(t, b);
    case AT_META_RECOVERED:
        return on_recovered(t, b);
    case AT_META_PATCH:
        return on_patch(t, b);
    case AT_META_MODULE:
    case AT_META_STACK:
        return at__stacks_load(t, type, b);
    default:
        return 0;
    }
}

int at__meta_load(struct trace *t, const uint8_t *p, size_t len, uint32_t count)
{
    const uint8_t *end = p + len;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t body_len;
        if (p == end)
            return -EINVAL;
        uint8_t type = *p++;
        if (at_varint_get(&p, end, &body_len) < 0 || body_len > (uint64_t)(end - p))
            return -EINVAL;
        struct body b = {p, p + body_len, false};
        int err = apply(t, type, &b);
        if (err < 0)
            return err;
        p += body_len;
    }
    return p == end ? 0 : -EINVAL;
}
