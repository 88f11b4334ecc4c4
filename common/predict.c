/* The predicted event encoding of EVENTS frames (docs/FORMAT.md section 4.2, encodings 2 and
 * 3): one pass over a block's slots that predicts each event from the thread's earlier events
 * (its kind from the kind that followed the previous one last time, its actor from the actor
 * that followed the previous event's, the rest from the last event of its kind about its
 * actor) and writes, per event, one byte saying which predictions held and only the values
 * that missed. A thread's events cycle through a few kinds whose fields repeat or step evenly
 * from one of a kind to the next, so most events come out as that byte and a timestamp
 * residual, and what is left needs no match finding to compress: Huffman coding of the bytes
 * (at_events_entropy) is enough.
 *
 * Like at_events_encode, the encoder reads each slot once (a slot uncommitted at the first
 * look may be committed at a second) and skips slots whose kind is 0. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_compressSequences, ZSTD_c_literalCompressionMode */
#include <zstd.h>

#include "at_codec.h"

#define ACTOR_SLOTS 256

/* What the encoder and the decoder remember of the last event of a kind about an actor, in the
 * slot found by a hash of the two, so that two actors (or two pairs) that share a slot only
 * make predictions miss. The events of a thread that alternates between actors (a ping-pong)
 * repeat per actor, not per kind. A value's prediction, the last one plus how it changed from
 * the one before, is kept worked out, so that the encoder compares with one load. One array
 * per field, indexed by the slot: an 8-byte scaled index addresses each without arithmetic. */
struct actor_memory {
    uint64_t peer_guess[ACTOR_SLOTS]; /* the next peer predicted */
    uint64_t gap[ACTOR_SLOTS];        /* the tsc delta from the event before it to it */
    uint64_t msg_guess[ACTOR_SLOTS];  /* the next msg predicted */
    uint64_t peer[ACTOR_SLOTS];       /* the last event's peer */
    uint64_t others[ACTOR_SLOTS]; /* its name, core and path: the low 56 bits of its last word */
    uint64_t msg[ACTOR_SLOTS];    /* its msg */
};

/* A block's memory, cleared for each block (18 KiB, less than encoding 300 events costs).
 * Per kind: the actor of its last event and the next one predicted (that actor plus how it
 * changed from the one before), and the kind of the event that followed it.
 * follows[slot of (kind, actor)]: the actor of the last event of that kind after an event
 * about that actor. A thread's actors follow one another in a pattern (a ping-pong alternates,
 * a loop over actors counts up), which this learns where the last actor of the kind does not. */
struct memory {
    uint64_t kind_actor[256], kind_guess[256];
    uint64_t follows[ACTOR_SLOTS];
    struct actor_memory slot;
    uint8_t next[256];
};

/* The prediction after value, which came after last: the same step again. */
static inline uint64_t step_on(uint64_t value, uint64_t last)
{
    return value + (value - last);
}

/* An actor's part of slot(kind, actor) (FORMAT.md 4.2), which the encoder works out once per
 * event: the event's own slot takes it, and the next event's follows entry. */
static inline unsigned actor_hash(uint64_t actor)
{
    return (unsigned)((actor * 0x9E3779B97F4A7C15ull) >> 56);
}

static inline unsigned slot_of(uint8_t kind, uint64_t actor)
{
    return actor_hash(actor) ^ kind;
}

/* An event's first byte (FORMAT.md 4.2). */
enum {
    ACTOR_MODE = 3,         /* bits 0-1: which prediction of the actor held (below) */
    PEER_MISSED = 1 << 2,   /* a varint follows: zigzag(peer - predicted peer) */
    MSG_MISSED = 1 << 3,    /* the same for msg */
    KIND_FOLLOWS = 1 << 4,  /* a byte follows: the kind, which is not the predicted one */
    OTHERS_FOLLOW = 1 << 5, /* 7 bytes follow: name (u32), core (u16), path (u8) */
    TSC_VARINT = 1 << 6,    /* the tsc residual is a varint, not one byte */
    MSG_PREVIOUS = 1 << 7,  /* msg is the previous event's (never with MSG_MISSED) */
};

/* The actor's predictions: the one that followed the previous event's actor last time (for an
 * event of this kind), the previous event's actor, the kind's last actor plus its step; or
 * none, and zigzag(actor - the first prediction) follows as a varint. */
enum {
    ACTOR_FOLLOWS = 0,
    ACTOR_PREVIOUS = 1,
    ACTOR_STEP = 2,
    ACTOR_MISSED = 3,
};

/* Writes v as a varint at p; returns the end. Residuals mostly take one byte, and a missed tsc
 * or msg two: those cases are stores, without at_varint_put's loop. */
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

/* The previous event of the block, of any kind; hash is actor_hash(actor). */
struct previous {
    uint64_t tsc, actor, msg;
    uint8_t kind;
    unsigned hash;
};

/* Which prediction of the actor held (ACTOR_*), worked out without branches, since irregular
 * traffic alternates between them. */
static inline unsigned actor_mode(uint64_t actor, uint64_t follows, uint64_t previous,
                                  uint64_t stepped)
{
    unsigned later = actor == previous ? ACTOR_PREVIOUS : ACTOR_MISSED - (actor == stepped);
    return actor == follows ? ACTOR_FOLLOWS : later;
}

/* Writes one committed event at p, its first byte last, and remembers it; returns the end.
 * Each field is compared with its prediction, its memory updated and its residual written in
 * turn, so that little is held at once. The kind and the name, core and path are stored
 * whether they follow or not, and the cursor moves past them only when they do, which spares
 * two branches that irregular traffic mispredicts: those stores stay within what
 * at_events_encode_bound allows, 50 bytes a slot against the 49 an event takes at most. */
static inline uint8_t *put_event(uint8_t *restrict p, const struct at_event *ev, uint64_t tail,
                                 struct memory *m, struct previous *prev)
{
    uint8_t kind = (uint8_t)(tail >> 56), *q = p + 1;
    uint64_t actor = ev->actor;
    unsigned hash = actor_hash(actor);
    uint64_t *follows = &m->follows[prev->hash ^ kind], actor_delta = actor - *follows;
    unsigned mode = actor_mode(actor, *follows, prev->actor, m->kind_guess[kind]), head = mode;
    *follows = actor;
    m->kind_guess[kind] = step_on(actor, m->kind_actor[kind]);
    m->kind_actor[kind] = actor;
    unsigned kind_missed = m->next[prev->kind] != kind;
    m->next[prev->kind] = kind;
    *q = kind;
    q += kind_missed;
    head |= kind_missed * KIND_FOLLOWS;
    if (mode == ACTOR_MISSED)
        q = put(q, at_zigzag(actor_delta));

    struct actor_memory *a = &m->slot;
    unsigned i = hash ^ kind;
    uint64_t others = tail & 0x00ffffffffffffffull;
    memcpy(q, &others, 8); /* 7 bytes kept: the next byte overwrites the 8th */
    head |= others != a->others[i] ? OTHERS_FOLLOW : 0;
    q += others != a->others[i] ? 7 : 0;
    a->others[i] = others;

    uint64_t gap = ev->tsc - prev->tsc, tsc = at_zigzag(gap - a->gap[i]);
    a->gap[i] = gap;
    if (tsc < 0x100) {
        *q++ = (uint8_t)tsc;
    } else {
        head |= TSC_VARINT;
        q = put(q, tsc);
    }

    uint64_t peer = ev->peer, peer_delta = peer - a->peer_guess[i];
    a->peer_guess[i] = step_on(peer, a->peer[i]), a->peer[i] = peer;
    if (peer_delta) {
        head |= PEER_MISSED;
        q = put(q, at_zigzag(peer_delta));
    }

    uint64_t msg = ev->msg, msg_delta = msg - a->msg_guess[i];
    a->msg_guess[i] = step_on(msg, a->msg[i]), a->msg[i] = msg;
    if (msg_delta) {
        head |= msg == prev->msg ? MSG_PREVIOUS : MSG_MISSED;
        if (msg != prev->msg)
            q = put(q, at_zigzag(msg_delta));
    }
    *p = (uint8_t)head;
    *prev = (struct previous){ev->tsc, actor, msg, kind, hash};
    return q;
}

size_t at_events_predict(const struct at_event *slots, uint32_t n, uint8_t *restrict out,
                         struct at_block_info *info)
{
    struct memory m;
    memset(&m, 0, sizeof m);
    struct previous prev = {.hash = actor_hash(0)};
    uint8_t *p = out;
    uint64_t lo = UINT64_MAX, hi = 0;
    uint32_t torn = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* kind, path, core and name are stored as one word with release, after the rest */
        uint64_t tail =
            __atomic_load_n((const uint64_t *)(const void *)&slots[i].name, __ATOMIC_ACQUIRE);
        if ((tail >> 56) == 0) {
            torn++;
            continue;
        }
        uint64_t before = prev.tsc;
        uint8_t *start = p;
        p = put_event(p, &slots[i], tail, &m, &prev);
        /* a thread's timestamps mostly grow, so the smallest is the first or one just after a
         * fall, and the largest the last or one just before a fall: only those need a look */
        if (prev.tsc < before || start == out) {
            lo = prev.tsc < lo ? prev.tsc : lo;
            hi = before > hi ? before : hi;
        }
    }
    hi = prev.tsc > hi ? prev.tsc : hi;
    uint32_t count = n - torn;
    *info = (struct at_block_info){
        .count = count, .torn = torn, .first_tsc = count ? lo : 0, .last_tsc = hi};
    return (size_t)(p - out);
}

/* ---- Decoding ------------------------------------------------------------------------------ */

/* A cursor over the bytes of one block, which every read checks against the end. */
struct reader {
    const uint8_t *p, *end;
};

static inline int get_varint(struct reader *r, uint64_t *v)
{
    if (r->p < r->end && *r->p < 0x80) {
        *v = *r->p++;
        return 0;
    }
    return at_varint_get(&r->p, r->end, v);
}

static inline int get_bytes(struct reader *r, void *to, size_t n)
{
    if ((size_t)(r->end - r->p) < n)
        return -1;
    memcpy(to, r->p, n);
    r->p += n;
    return 0;
}

/* A peer or msg: its prediction, plus the residual that follows when `missed`. */
static inline int get_field(struct reader *r, int missed, uint64_t guess, uint64_t *out)
{
    uint64_t z = 0;
    if (missed && get_varint(r, &z) < 0)
        return -1;
    *out = guess + at_unzigzag(z);
    return 0;
}

/* The event's kind and actor, which choose the memory the rest is predicted from. */
static int get_kind_actor(struct reader *r, unsigned head, struct memory *m,
                          const struct previous *prev, struct at_event *ev)
{
    uint8_t *next = &m->next[prev->kind], kind = *next;
    if ((head & KIND_FOLLOWS) && (get_bytes(r, &kind, 1) < 0 || kind == *next))
        return -1;
    if (kind == 0)
        return -1;
    *next = kind;
    ev->kind = kind;
    uint64_t *follows = &m->follows[prev->hash ^ kind], z;
    switch (head & ACTOR_MODE) {
    case ACTOR_FOLLOWS:
        ev->actor = *follows;
        break;
    case ACTOR_PREVIOUS:
        ev->actor = prev->actor;
        break;
    case ACTOR_STEP:
        ev->actor = m->kind_guess[kind];
        break;
    case ACTOR_MISSED:
        if (get_varint(r, &z) < 0)
            return -1;
        ev->actor = *follows + at_unzigzag(z);
        break;
    }
    *follows = ev->actor;
    m->kind_guess[kind] = step_on(ev->actor, m->kind_actor[kind]);
    m->kind_actor[kind] = ev->actor;
    return 0;
}

static int get_tsc(struct reader *r, unsigned head, uint64_t *z)
{
    *z = 0;
    if (head & TSC_VARINT)
        return get_varint(r, z) < 0 || *z < 0x100 ? -1 : 0;
    return get_bytes(r, z, 1);
}

static int decode_event(struct reader *r, struct memory *m, struct previous *prev,
                        struct at_event *ev)
{
    uint8_t head;
    if (get_bytes(r, &head, 1) < 0 || get_kind_actor(r, head, m, prev, ev) < 0)
        return -1;
    struct actor_memory *a = &m->slot;
    unsigned i = slot_of(ev->kind, ev->actor);
    uint64_t z;
    if (((head & OTHERS_FOLLOW) && get_bytes(r, &a->others[i], 7) < 0) || get_tsc(r, head, &z) < 0)
        return -1;
    a->gap[i] += at_unzigzag(z);
    ev->tsc = prev->tsc + a->gap[i];
    if ((head & MSG_PREVIOUS) && (head & MSG_MISSED))
        return -1;
    if (get_field(r, head & PEER_MISSED, a->peer_guess[i], &ev->peer) < 0 ||
        get_field(r, head & MSG_MISSED, (head & MSG_PREVIOUS) ? prev->msg : a->msg_guess[i],
                  &ev->msg) < 0)
        return -1;
    a->peer_guess[i] = step_on(ev->peer, a->peer[i]), a->peer[i] = ev->peer;
    a->msg_guess[i] = step_on(ev->msg, a->msg[i]), a->msg[i] = ev->msg;
    ev->name = (uint32_t)a->others[i];
    ev->core = (uint16_t)(a->others[i] >> 32);
    ev->path = (uint8_t)(a->others[i] >> 48);
    *prev = (struct previous){ev->tsc, ev->actor, ev->msg, ev->kind, actor_hash(ev->actor)};
    return 0;
}

int at_events_unpredict(const uint8_t *in, size_t len, uint32_t count, struct at_event *out)
{
    struct memory m;
    memset(&m, 0, sizeof m);
    struct previous prev = {0};
    struct reader r = {in, in + len};
    for (uint32_t i = 0; i < count; i++)
        if (decode_event(&r, &m, &prev, &out[i]) < 0)
            return -EINVAL;
    return r.p == r.end ? 0 : -EINVAL;
}

/* ---- The entropy stage --------------------------------------------------------------------- */

int at_events_entropy_init(struct ZSTD_CCtx_s *cctx)
{
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable)))
        return -EINVAL;
    return 0;
}

size_t at_events_entropy(struct ZSTD_CCtx_s *cctx, uint8_t *out, size_t cap, const uint8_t *in,
                         size_t len)
{
    /* no sequences: every byte is a literal, so zstd only Huffman-codes them */
    size_t n = ZSTD_compressSequences(cctx, out, cap, NULL, 0, in, len);
    return ZSTD_isError(n) ? 0 : n;
}
