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
 * name 5 (u32): 50. An event off a clock's step or lattice costs 4 more (its index's gap, 3
 * bytes below 2^17 events, and its remainder), and the first event never is; a block with a
 * step or a lattice also has its head (a step's byte; a lattice's period, count and at most 8
 * residues) and the count of the events off it (3 bytes): 64 bytes an event cover all of it,
 * a block of one event included. FORMAT.md repeats this bound for readers. */
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
    BYTES_PER_EVENT = 64,
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

/* A divisor: the step or a lattice's period, and its reciprocal, 2^64 / divisor rounded up. */
struct step {
    uint64_t step, reciprocal;
};

static struct step step_of(uint32_t step)
{
    return (struct step){step, UINT64_MAX / step + 1};
}

/* a / s.step rounded down, from the multiplication by the reciprocal, which is exact or one
 * over, and then corrected: a 64-bit division costs more than the rest of an event's
 * encoding. */
static inline uint64_t step_quotient(uint64_t a, struct step s)
{
    uint64_t q = (uint64_t)(((unsigned __int128)a * s.reciprocal) >> 64);
    return q - (q * s.step > a);
}

/* delta = q * step + r with 0 <= r < step (q rounded down, delta read as signed); returns q. */
static inline uint64_t step_split(uint64_t delta, struct step s, uint8_t *r)
{
    int negative = (int64_t)delta < 0;
    uint64_t a = negative ? 0 - delta : delta;
    uint64_t q = step_quotient(a, s);
    uint64_t rest = a - q * s.step;
    if (negative && rest) {
        q++;
        rest = s.step - rest;
    }
    *r = (uint8_t)rest;
    return negative ? 0 - q : q;
}

/* A lattice as the encoder and the decoder use it (FORMAT.md 4.4): with u = tsc - residue[0]
 * (wrapping), u mod period is at or past the class index[u mod period]'s residue, by
 * rest[u mod period] ticks; the lattice index of tsc is (u / period) * count + that class. */
struct lattice {
    struct step period, count;      /* count: the classes */
    uint64_t first;                 /* residue[0] */
    uint8_t index[256], rest[256];  /* by u mod period */
    uint8_t offset[AT_LATTICE_MAX]; /* residue[j] - residue[0] */
};

/* Whether the lattice is one a block can hold: period 2 to 255, 2 to AT_LATTICE_MAX residues,
 * ascending and below the period. */
static int lattice_valid(const struct at_tsc_lattice *l)
{
    if (l->period < 2 || l->period > UINT8_MAX || l->count < 2 || l->count > AT_LATTICE_MAX)
        return 0;
    for (uint32_t j = 0; j < l->count; j++)
        if (l->residue[j] >= l->period || (j > 0 && l->residue[j] <= l->residue[j - 1]))
            return 0;
    return 1;
}

static void lattice_of(const struct at_tsc_lattice *l, struct lattice *out)
{
    out->period = step_of(l->period);
    out->count = step_of(l->count);
    out->first = l->residue[0];
    uint32_t j = 0;
    for (uint32_t j2 = 0; j2 < l->count; j2++)
        out->offset[j2] = (uint8_t)(l->residue[j2] - l->residue[0]);
    for (uint32_t u = 0; u < l->period; u++) {
        while (j + 1 < l->count && out->offset[j + 1] <= u)
            j++;
        out->index[u] = (uint8_t)j;
        out->rest[u] = (uint8_t)(u - out->offset[j]);
    }
}

/* The lattice index of tsc, and in *r how many ticks tsc lies past that point (0 on it). */
static inline uint64_t lattice_index(uint64_t tsc, const struct lattice *l, uint8_t *r)
{
    uint64_t u = tsc - l->first, q = step_quotient(u, l->period);
    uint64_t within = u - q * l->period.step;
    *r = l->rest[within];
    return q * l->count.step + l->index[within];
}

/* The tsc at lattice index n: the inverse of lattice_index for a point on the lattice. */
static inline uint64_t lattice_point(uint64_t n, const struct lattice *l)
{
    uint64_t q = step_quotient(n, l->count);
    return l->first + q * l->period.step + l->offset[n - q * l->count.step];
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
enum clock { CLOCK_FINE, CLOCK_STEP, CLOCK_LATTICE };

static inline __attribute__((always_inline)) uint64_t
scan(const struct at_event *slots, uint32_t n, struct regions *r, struct at_block_info *info,
     enum clock clock, struct step step, const struct lattice *lattice)
{
    /* the kind and path columns take a byte an event each, so the kind cursor also counts the
     * events and finds the path's byte at a fixed distance */
    uint8_t *const kinds = r->kind, *kind = kinds, *core = r->core, *tsc_out = r->tsc;
    uint8_t *actor = r->actor, *peer = r->peer, *msg = r->msg, *name = r->name;
    uint8_t *off_step = r->off_step;
    uint32_t off_step_count = 0, last_off_step = 0;
    size_t to_path = (size_t)(r->path - r->kind);
    uint64_t first = 0, prev_tsc = 0, prev_index = 0, lo = 0, hi = 0;
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
            if (clock == CLOCK_LATTICE) {
                uint8_t rest;
                prev_index = lattice_index(tsc, lattice, &rest);
            }
        } else {
            uint64_t delta = tsc - prev_tsc;
            uint8_t rest = 0;
            if (clock == CLOCK_STEP) {
                delta = step_split(delta, step, &rest);
            } else if (clock == CLOCK_LATTICE) {
                uint64_t index = lattice_index(tsc, lattice, &rest);
                delta = index - prev_index;
                prev_index = index;
            }
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

enum at_frame_encoding at_tsc_lattice_encoding(const struct at_tsc_lattice *lattice)
{
    if (!lattice || lattice->period < 2 || lattice->period > UINT8_MAX)
        return AT_ENC_RAW;
    if (lattice->count == 1)
        return AT_ENC_STEPPED;
    return lattice_valid(lattice) ? AT_ENC_LATTICE : AT_ENC_RAW;
}

size_t at_events_encode(const struct at_event *slots, uint32_t n, uint8_t *out,
                        struct at_block_info *info, const struct at_tsc_lattice *clock)
{
    *info = (struct at_block_info){0};
    if (n == 0)
        return 0;
    size_t cap = n;
    enum at_frame_encoding encoding = at_tsc_lattice_encoding(clock);
    struct lattice lattice;
    /* the head: a step's byte; a lattice's period, count and residues */
    size_t head = encoding == AT_ENC_STEPPED   ? 1
                  : encoding == AT_ENC_LATTICE ? 2 + clock->count
                                               : 0;
    uint8_t *base = out + head;
    struct regions start = {
        base + COL_KIND * cap,     base + COL_PATH * cap,
        base + COL_CORE * cap,     base + COL_TSC * cap + AT_VARINT_MAX,
        base + COL_ACTOR * cap,    base + COL_PEER * cap,
        base + COL_MSG * cap,      base + COL_NAME * cap,
        base + COL_OFF_STEP * cap, 0,
    };
    struct regions r = start;
    /* a copy of the pass for each kind of clock, each with `clock` a constant */
    uint64_t first;
    if (encoding == AT_ENC_STEPPED) {
        first = scan(slots, n, &r, info, CLOCK_STEP, step_of(clock->period), NULL);
    } else if (encoding == AT_ENC_LATTICE) {
        lattice_of(clock, &lattice);
        first = scan(slots, n, &r, info, CLOCK_LATTICE, (struct step){1, 0}, &lattice);
    } else {
        first = scan(slots, n, &r, info, CLOCK_FINE, (struct step){1, 0}, NULL);
    }
    if (info->count == 0)
        return 0;

    if (encoding == AT_ENC_STEPPED) {
        out[0] = (uint8_t)clock->period;
    } else if (encoding == AT_ENC_LATTICE) {
        out[0] = (uint8_t)clock->period;
        out[1] = (uint8_t)clock->count;
        memcpy(out + 2, clock->residue, clock->count);
    }
    size_t len = head + info->count; /* the kind column is already in place */
    move_down(out, &len, start.path, r.path);
    move_down(out, &len, start.core, r.core);
    len += at_varint_put(out + len, at_zigzag(first - info->first_tsc));
    move_down(out, &len, start.tsc, r.tsc);
    move_down(out, &len, start.actor, r.actor);
    move_down(out, &len, start.peer, r.peer);
    move_down(out, &len, start.msg, r.msg);
    move_down(out, &len, start.name, r.name);
    if (head) { /* the count of events off the step or lattice, then their list */
        uint8_t count[AT_VARINT_MAX];
        size_t count_len = at_varint_put(count, r.off_step_count);
        size_t list_len = (size_t)(r.off_step - start.off_step);
        memmove(out + len + count_len, start.off_step, list_len);
        memcpy(out + len, count, count_len);
        len += count_len + list_len;
    }
    return len;
}

/* Whether count ascending residues mod period lie as a clock adding period / count ticks at a
 * time puts them: every gap to the next (the last's to the first's, round the period) is that,
 * rounded down or up. Readings that miss some of a lattice's points (they fall on a multiple of
 * its period with fewer residues than it has) leave a wider gap. */
static int evenly_spread(const uint8_t *residue, uint32_t count, uint32_t period)
{
    for (uint32_t j = 0; j < count; j++) {
        uint32_t gap = (j + 1 < count ? residue[j + 1] : residue[0] + period) - residue[j];
        if (gap * count + count <= period || gap * count >= period + count)
            return 0;
    }
    return 1;
}

/* The lattice of period the samples[0..n) lie on, into *l, when one does (see at_tsc_lattice):
 * the residues that hold a quarter as many samples as the most frequent one or more (all the
 * classes of a lattice, none of the readings a tick off it now and then), at most
 * AT_LATTICE_MAX, holding three samples in four, evenly spread, at least 2 ticks a point. */
static int lattice_for(const uint64_t *samples, size_t n, uint32_t period, struct at_tsc_lattice *l)
{
    struct step divisor = step_of(period);
    size_t seen[UINT8_MAX];
    memset(seen, 0, period * sizeof seen[0]);
    uint32_t most = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = (uint32_t)(samples[i] - step_quotient(samples[i], divisor) * period);
        most = ++seen[r] > seen[most] ? r : most;
    }
    /* 8 residues that hold three samples in four hold 3/32 of them in the largest */
    if (seen[most] * 32 < n * 3)
        return 0;
    *l = (struct at_tsc_lattice){.period = period};
    size_t held = 0;
    for (uint32_t r = 0; r < period; r++) {
        if (seen[r] * 4 < seen[most] || seen[r] == 0)
            continue;
        if (l->count == AT_LATTICE_MAX)
            return 0;
        l->residue[l->count++] = (uint8_t)r;
        held += seen[r];
    }
    return l->count > 0 && held * 4 >= n * 3 && 2 * l->count <= period &&
           evenly_spread(l->residue, l->count, period);
}

void at_tsc_lattice(const uint64_t *samples, size_t n, struct at_tsc_lattice *out)
{
    *out = (struct at_tsc_lattice){.period = 1, .count = 1};
    size_t moved = 0;
    for (size_t i = 1; i < n; i++)
        moved += samples[i] != samples[i - 1];
    if (moved * 2 < n) /* the residues of a clock that did not move say nothing */
        return;
    /* each period tried on the first 64 samples, and only one that passes on all of them: a
     * fraction of the work, which the writer does before it writes anything */
    size_t first = n < 64 ? n : 64;
    for (uint32_t period = 2; period <= UINT8_MAX; period++) {
        struct at_tsc_lattice l;
        /* more ticks a point than the best so far (a multiple of its period with as many more
         * residues is no better) */
        if (lattice_for(samples, first, period, &l) && lattice_for(samples, n, period, &l) &&
            period * out->count > out->period * l.count)
            *out = l;
    }
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

/* The tsc column with a step or a lattice: the first varint as without one, then the
 * quotients or the lattice index deltas, kept in out[i].tsc (i >= 1) until the events off the
 * step or lattice are read (add_off_step, add_off_lattice). */
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

/* The count of the events off the step or lattice, and then, at each call, the next one's
 * index (a gap from the previous one's, from 0) and remainder, which is at least 1: UINT32_MAX
 * for the index when there are no more. */
struct off_list {
    uint64_t left;
    uint32_t index;
    uint8_t rest;
};

static int off_list_start(const uint8_t **p, const uint8_t *end, uint32_t count,
                          struct off_list *list)
{
    *list = (struct off_list){.index = 0};
    return get(p, end, &list->left) < 0 || list->left >= count ? -EINVAL : 0;
}

static int off_list_next(const uint8_t **p, const uint8_t *end, uint32_t count,
                         struct off_list *list)
{
    if (list->left == 0) {
        list->index = UINT32_MAX;
        return 0;
    }
    list->left--;
    uint64_t gap;
    if (get(p, end, &gap) < 0 || gap == 0 || gap >= count - list->index || *p == end || **p == 0)
        return -EINVAL;
    list->index += (uint32_t)gap;
    list->rest = *(*p)++;
    return 0;
}

/* Then tsc[i] = tsc[i-1] + quotient * step + remainder, wrapping, the remainder 1 to step - 1
 * for the events listed, 0 for the others. */
static int add_off_step(const uint8_t **p, const uint8_t *end, uint32_t count, uint8_t step,
                        struct at_event *out)
{
    struct off_list list;
    if (off_list_start(p, end, count, &list) < 0 || off_list_next(p, end, count, &list) < 0)
        return -EINVAL;
    for (uint32_t i = 1; i < count; i++) {
        uint64_t rest = 0;
        if (i == list.index) {
            if (list.rest >= step)
                return -EINVAL;
            rest = list.rest;
            if (off_list_next(p, end, count, &list) < 0)
                return -EINVAL;
        }
        out[i].tsc = out[i - 1].tsc + out[i].tsc * step + rest;
    }
    return 0;
}

/* Then tsc[i] is the point at lattice index n[i] = n[i-1] + delta, wrapping (n[0] that of
 * tsc[0]), plus the remainder for the events listed: 1 to the distance to the next point,
 * less one. */
static int add_off_lattice(const uint8_t **p, const uint8_t *end, uint32_t count,
                           const struct lattice *lattice, struct at_event *out)
{
    struct off_list list;
    if (off_list_start(p, end, count, &list) < 0 || off_list_next(p, end, count, &list) < 0)
        return -EINVAL;
    uint8_t ignored;
    uint64_t index = lattice_index(out[0].tsc, lattice, &ignored);
    for (uint32_t i = 1; i < count; i++) {
        index += out[i].tsc;
        out[i].tsc = lattice_point(index, lattice);
        if (i == list.index) {
            /* the distance to the next point, from its class */
            uint64_t class = index - step_quotient(index, lattice->count) * lattice->count.step;
            uint64_t next =
                class + 1 < lattice->count.step ? lattice->offset[class + 1] : lattice->period.step;
            if (list.rest >= next - lattice->offset[class])
                return -EINVAL;
            out[i].tsc += list.rest;
            if (off_list_next(p, end, count, &list) < 0)
                return -EINVAL;
        }
    }
    return 0;
}

/* The head of a block with a lattice: period, count, residues; into *lattice. Returns its
 * length, or 0 when it is malformed. */
static size_t lattice_head(const uint8_t *in, size_t len, struct lattice *lattice)
{
    if (len < 2 || len < 2 + (size_t)in[1])
        return 0;
    struct at_tsc_lattice head = {.period = in[0], .count = in[1]};
    if (head.count > AT_LATTICE_MAX)
        return 0;
    memcpy(head.residue, in + 2, head.count);
    if (!lattice_valid(&head))
        return 0;
    lattice_of(&head, lattice);
    return 2 + head.count;
}

int at_events_decode(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                     enum at_delta_base base, struct at_event *out, enum at_frame_encoding clock)
{
    if (count == 0)
        return len == 0 ? 0 : -EINVAL;
    uint8_t step = 1;
    struct lattice lattice;
    if (clock == AT_ENC_STEPPED) {
        if (len < 1 || in[0] < 2)
            return -EINVAL;
        step = in[0];
        in++, len--;
    } else if (clock == AT_ENC_LATTICE) {
        size_t head = lattice_head(in, len, &lattice);
        if (head == 0)
            return -EINVAL;
        in += head, len -= head;
    } else if (clock != AT_ENC_RAW) {
        return -EINVAL;
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
        (clock != AT_ENC_RAW ? quotient_column(&p, end, count, first_tsc, out)
                             : delta_column(&p, end, count, first_tsc, AT_DELTA_PREVIOUS, out,
                                            offsetof(struct at_event, tsc))) < 0 ||
        delta_column(&p, end, count, 0, base, out, offsetof(struct at_event, actor)) < 0 ||
        delta_column(&p, end, count, 0, base, out, offsetof(struct at_event, peer)) < 0 ||
        delta_column(&p, end, count, 0, base, out, offsetof(struct at_event, msg)) < 0 ||
        plain_column(&p, end, count, UINT32_MAX, out, 0) < 0 ||
        (clock == AT_ENC_STEPPED && add_off_step(&p, end, count, step, out) < 0) ||
        (clock == AT_ENC_LATTICE && add_off_lattice(&p, end, count, &lattice, out) < 0))
        return -EINVAL;
    return p == end ? 0 : -EINVAL;
}
