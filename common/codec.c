/* The columnar event block of an EVENTS frame (docs/FORMAT.md section 4): the recorder's writer
 * encodes a block of slots with at_events_encode, the decoder reverses it with at_events_decode.
 *
 * The encoder reads each slot exactly once, because a slot that was uncommitted at the first
 * look may be committed by the time of a second one (an exit-time flush races the threads that
 * are still recording). One pass therefore writes every column at once, each into its own
 * region of `out` sized for the worst case, and a second step moves the columns together. The
 * first tsc delta is relative to the smallest tsc, which is known only after the pass, so the
 * tsc region keeps room for its first varint and that one is written while compacting. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode */
#include <zstd.h>

#include "at_codec.h"

/* Worst case bytes per event: kind 1, path 1, core 3 (u16), tsc, actor, peer and msg 10 each,
 * name 5 (u32): 50. With a clock step a quotient takes 9 bytes at most, and an event off the
 * step 4 more (its index's gap, 3 bytes below 2^17 events, and its remainder); a block with a
 * step also has the step's byte and the count of those events (3 bytes), which 54 bytes an
 * event cover. FORMAT.md repeats this bound for readers. */
enum {
    COL_KIND = 0,
    COL_PATH = 1,
    COL_CORE = 2,
    COL_TSC = 5,
    COL_ACTOR = 15,
    COL_PEER = 25,
    COL_MSG = 35,
    COL_NAME = 45,
    COL_OFF_STEP = 50,
    BYTES_PER_EVENT = 54,
};

size_t at_events_encode_bound(uint32_t n)
{
    return (size_t)n * BYTES_PER_EVENT;
}

/* Write cursors of the column regions during the encoding pass, and with a step the events off
 * it (their number in off_step_count). */
struct regions {
    uint8_t *kind, *path, *core, *tsc, *actor, *peer, *msg, *name, *off_step;
    uint32_t off_step_count;
};

/* A divisor for step_split: the step and its reciprocal, 2^64 / step rounded up. */
struct step {
    uint64_t step, reciprocal;
};

static struct step step_of(uint32_t step)
{
    return (struct step){step, UINT64_MAX / step + 1};
}

/* delta = q * step + r with 0 <= r < step (q rounded down, delta read as signed); returns q,
 * which is exact or one over from the multiplication by the reciprocal, and then corrected:
 * a 64-bit division costs more than the rest of an event's encoding. */
static inline uint64_t step_split(uint64_t delta, struct step s, uint8_t *r)
{
    int negative = (int64_t)delta < 0;
    uint64_t a = negative ? 0 - delta : delta;
    uint64_t q = (uint64_t)(((unsigned __int128)a * s.reciprocal) >> 64);
    q -= q * s.step > a;
    uint64_t rest = a - q * s.step;
    if (negative && rest) {
        q++;
        rest = s.step - rest;
    }
    *r = (uint8_t)rest;
    return negative ? 0 - q : q;
}

static uint64_t slot_tail(const struct at_event *slot)
{
    /* The recorder stores name, core, path and kind as one word with release; acquire here
     * makes the fields it stored before that word visible. */
    return __atomic_load_n((const uint64_t *)(const void *)&slot->name, __ATOMIC_ACQUIRE);
}

/* The actor, peer and msg of the last event of each kind, which the next one of that kind is
 * encoded against: a thread's events cycle through a few kinds (send, park, recv, ...) whose
 * fields change little from one of a kind to the next, and much from one kind to another. */
struct last_of_kind {
    uint64_t actor[256], peer[256], msg[256]; /* one array per field: the kind indexes each */
};

/* Writes v as a varint at p; returns the end. Most values take one byte, and tsc deltas
 * mostly one or two: those cases are stores, without at_varint_put's loop. */
static inline uint8_t *put(uint8_t *p, uint64_t v)
{
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    return p + at_varint_put(p, v);
}

/* The one pass over the slots. Returns the tsc of the first committed slot. The cursors,
 * counts and bounds live in locals for the length of the loop: every byte stored through a
 * uint8_t pointer may alias anything, so fields reached through r or info would be reloaded
 * and stored again around each of the eight columns' stores. */
static inline __attribute__((always_inline)) uint64_t scan(const struct at_event *slots, uint32_t n,
                                                           struct regions *r,
                                                           struct at_block_info *info, int stepped,
                                                           struct step step)
{
    /* the kind and path columns take a byte an event each, so the kind cursor also counts the
     * events and finds the path's byte at a fixed distance */
    uint8_t *const kinds = r->kind, *kind = kinds, *core = r->core, *tsc_out = r->tsc;
    uint8_t *actor = r->actor, *peer = r->peer, *msg = r->msg, *name = r->name;
    uint8_t *off_step = r->off_step;
    uint32_t off_step_count = 0, last_off_step = 0;
    size_t to_path = (size_t)(r->path - r->kind);
    uint64_t first = 0, prev_tsc = 0, lo = 0, hi = 0;
    uint32_t torn = 0;
    struct last_of_kind last = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint64_t tail = slot_tail(&slots[i]);
        if ((tail >> 56) == 0) {
            torn++;
            continue;
        }
        const struct at_event *ev = &slots[i];
        uint64_t tsc = ev->tsc;
        uint8_t k = (uint8_t)(tail >> 56);
        if (kind == kinds) {
            first = lo = hi = tsc;
        } else {
            uint64_t delta = tsc - prev_tsc;
            uint8_t rest = 0;
            if (stepped)
                delta = step_split(delta, step, &rest);
            tsc_out = put(tsc_out, at_zigzag(delta));
            if (__builtin_expect(rest != 0, 0)) { /* a clock off its step now and then */
                uint32_t index = (uint32_t)(kind - kinds);
                off_step = put(off_step, index - last_off_step);
                *off_step++ = rest;
                last_off_step = index;
                off_step_count++;
            }
            /* a thread's timestamps mostly grow, so the smallest is the first or one just
             * after a fall, and the largest the last or one just before a fall */
            if (tsc < prev_tsc) {
                lo = tsc < lo ? tsc : lo;
                hi = prev_tsc > hi ? prev_tsc : hi;
            }
        }
        kind[to_path] = (uint8_t)(tail >> 48);
        *kind++ = k;
        core = put(core, (tail >> 32) & 0xffff);
        actor = put(actor, at_zigzag(ev->actor - last.actor[k]));
        peer = put(peer, at_zigzag(ev->peer - last.peer[k]));
        msg = put(msg, at_zigzag(ev->msg - last.msg[k]));
        name = put(name, (uint32_t)tail);
        prev_tsc = tsc;
        last.actor[k] = ev->actor, last.peer[k] = ev->peer, last.msg[k] = ev->msg;
    }
    uint32_t count = (uint32_t)(kind - kinds);
    hi = prev_tsc > hi ? prev_tsc : hi;
    *r = (struct regions){kind, kind + to_path, core,     tsc_out,       actor, peer,
                          msg,  name,           off_step, off_step_count};
    *info = (struct at_block_info){
        .count = count, .torn = torn, .first_tsc = lo, .last_tsc = hi, .off_step = off_step_count};
    return first;
}

/* Moves region [start, end) of out down to out + *len. Every region starts at or past the
 * compacted length, because no column exceeds its worst-case size. */
static void move_down(uint8_t *out, size_t *len, const uint8_t *start, const uint8_t *end)
{
    size_t size = (size_t)(end - start);
    memmove(out + *len, start, size);
    *len += size;
}

size_t at_events_encode(const struct at_event *slots, uint32_t n, uint8_t *out,
                        struct at_block_info *info, uint32_t step)
{
    *info = (struct at_block_info){0};
    if (n == 0)
        return 0;
    size_t cap = n;
    int stepped = step > 1 && step <= UINT8_MAX;
    uint8_t *base = out + stepped; /* the step's byte, then the columns */
    struct regions start = {
        base + COL_KIND * cap,     base + COL_PATH * cap,
        base + COL_CORE * cap,     base + COL_TSC * cap + AT_VARINT_MAX,
        base + COL_ACTOR * cap,    base + COL_PEER * cap,
        base + COL_MSG * cap,      base + COL_NAME * cap,
        base + COL_OFF_STEP * cap, 0,
    };
    struct regions r = start;
    /* two copies of the pass, each with `stepped` a constant */
    uint64_t first = stepped ? scan(slots, n, &r, info, 1, step_of(step))
                             : scan(slots, n, &r, info, 0, (struct step){1, 0});
    if (info->count == 0)
        return 0;

    if (stepped)
        out[0] = (uint8_t)step;
    size_t len = stepped + info->count; /* the kind column is already in place */
    move_down(out, &len, start.path, r.path);
    move_down(out, &len, start.core, r.core);
    len += at_varint_put(out + len, at_zigzag(first - info->first_tsc));
    move_down(out, &len, start.tsc, r.tsc);
    move_down(out, &len, start.actor, r.actor);
    move_down(out, &len, start.peer, r.peer);
    move_down(out, &len, start.msg, r.msg);
    move_down(out, &len, start.name, r.name);
    if (stepped) { /* the count of events off the step, then their list */
        uint8_t count[AT_VARINT_MAX];
        size_t count_len = at_varint_put(count, r.off_step_count);
        size_t list_len = (size_t)(r.off_step - start.off_step);
        memmove(out + len + count_len, start.off_step, list_len);
        memcpy(out + len, count, count_len);
        len += count_len + list_len;
    }
    return len;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t rest = a % b;
        a = b;
        b = rest;
    }
    return a;
}

uint32_t at_tsc_step(uint64_t *deltas, size_t n)
{
    qsort(deltas, n, sizeof *deltas, by_value);
    size_t often = n / 32 > 2 ? n / 32 : 2;
    uint64_t step = 0;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && deltas[j] == deltas[i]; j++)
            ;
        if (deltas[i] != 0 && j - i >= often)
            step = gcd(deltas[i], step);
    }
    if (step < 2 || step > UINT8_MAX)
        return 1;
    size_t multiples = 0;
    for (size_t i = 0; i < n; i++)
        multiples += deltas[i] % step == 0;
    return multiples * 4 >= n * 3 ? (uint32_t)step : 1;
}

/* At the fast levels (1 and 2, 1 the default) literals are stored as they are: what the
 * column encoding leaves for Huffman coding is mostly tsc deltas, which it shrinks little, and
 * coding them took about 2 of the writer's 12 ns per event on the nop_send loop and on pingpong
 * (the files stay under half a byte per event there). */
int at_events_compression(struct ZSTD_CCtx_s *cctx, int level)
{
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)))
        return -EINVAL;
    if (level <= 2)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
    return 0;
}

/* Reads one varint; most are one byte, so that case skips the loop. */
static inline int get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    if (*p < end && **p < 0x80) {
        *v = *(*p)++;
        return 0;
    }
    return at_varint_get(p, end, v);
}

/* A column of zigzag deltas into the u64 field at `field` (an offsetof) of each event, each
 * against the previous event (starting from `first`), or against the previous event of the
 * same kind (starting from 0; the kinds are decoded already). */
static int delta_column(const uint8_t **p, const uint8_t *end, uint32_t count, uint64_t first,
                        enum at_delta_base base, struct at_event *out, size_t field)
{
    uint64_t last[256] = {0}, previous = first;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t z;
        if (get(p, end, &z) < 0)
            return -EINVAL;
        uint64_t *against = base == AT_DELTA_SAME_KIND ? &last[out[i].kind] : &previous;
        *against += at_unzigzag(z);
        memcpy((char *)&out[i] + field, against, sizeof *against);
    }
    return 0;
}

/* A column of plain values no larger than max: core (u16) or name (u32). */
static int plain_column(const uint8_t **p, const uint8_t *end, uint32_t count, uint64_t max,
                        struct at_event *out, int is_core)
{
    for (uint32_t i = 0; i < count; i++) {
        uint64_t v;
        if (get(p, end, &v) < 0 || v > max)
            return -EINVAL;
        if (is_core)
            out[i].core = (uint16_t)v;
        else
            out[i].name = (uint32_t)v;
    }
    return 0;
}

/* The tsc column with a step: the first varint as without one, then the quotients, kept in
 * out[i].tsc (i >= 1) until the events off the step are read (add_off_step). */
static int quotient_column(const uint8_t **p, const uint8_t *end, uint32_t count,
                           uint64_t first_tsc, struct at_event *out)
{
    for (uint32_t i = 0; i < count; i++) {
        uint64_t z;
        if (get(p, end, &z) < 0)
            return -EINVAL;
        out[i].tsc = i == 0 ? first_tsc + at_unzigzag(z) : at_unzigzag(z);
    }
    return 0;
}

/* The events off the step, last in the block: how many, then each one's index (a gap from the
 * previous one's, from 0) and remainder, 1 to step - 1. Then tsc[i] = tsc[i-1] + quotient *
 * step + remainder, wrapping. */
static int add_off_step(const uint8_t **p, const uint8_t *end, uint32_t count, uint8_t step,
                        struct at_event *out)
{
    for (uint32_t i = 1; i < count; i++)
        out[i].tsc *= step;
    uint64_t n, index = 0;
    if (get(p, end, &n) < 0 || n >= count)
        return -EINVAL;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t gap;
        if (get(p, end, &gap) < 0 || gap == 0 || gap >= count - index || *p == end || **p == 0 ||
            **p >= step)
            return -EINVAL;
        index += gap;
        out[index].tsc += *(*p)++;
    }
    for (uint32_t i = 1; i < count; i++)
        out[i].tsc += out[i - 1].tsc;
    return 0;
}

int at_events_decode(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                     enum at_delta_base base, struct at_event *out, int stepped)
{
    if (count == 0)
        return len == 0 ? 0 : -EINVAL;
    uint8_t step = 1;
    if (stepped) {
        if (len < 1 || in[0] < 2)
            return -EINVAL;
        step = in[0];
        in++, len--;
    }
    if (len < 2 * (size_t)count)
        return -EINVAL;
    for (uint32_t i = 0; i < count; i++) {
        if (in[i] == 0)
            return -EINVAL;
        out[i].kind = in[i];
        out[i].path = in[count + i];
    }
    const uint8_t *p = in + 2 * (size_t)count, *end = in + len;
    if (plain_column(&p, end, count, UINT16_MAX, out, 1) < 0 ||
        (stepped ? quotient_column(&p, end, count, first_tsc, out)
                 : delta_column(&p, end, count, first_tsc, AT_DELTA_PREVIOUS, out,
                                offsetof(struct at_event, tsc))) < 0 ||
        delta_column(&p, end, count, 0, base, out, offsetof(struct at_event, actor)) < 0 ||
        delta_column(&p, end, count, 0, base, out, offsetof(struct at_event, peer)) < 0 ||
        delta_column(&p, end, count, 0, base, out, offsetof(struct at_event, msg)) < 0 ||
        plain_column(&p, end, count, UINT32_MAX, out, 0) < 0 ||
        (stepped && add_off_step(&p, end, count, step, out) < 0))
        return -EINVAL;
    return p == end ? 0 : -EINVAL;
}
