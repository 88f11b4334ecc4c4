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

/* What the encoder and the decoder remember of the last event of each kind in the block. */
struct kind_memory {
    uint64_t actor, actor_step; /* its actor, and how that changed from the one before */
    uint8_t next;               /* the kind of the event that followed it */
};

/* What they remember of the last event of a kind about an actor: found by a hash of the two,
 * so that two actors (or two pairs) that share a slot only make predictions miss. The events
 * of a thread that alternates between actors (a ping-pong) repeat per actor, not per kind. */
struct actor_memory {
    uint64_t peer, msg;           /* the last event's values */
    uint64_t peer_step, msg_step; /* how they changed from the one before */
    uint64_t gap;                 /* the tsc delta from the event before it to it */
    uint64_t others;              /* its name, core and path: the low 56 bits of its last word */
};

#define ACTOR_SLOTS 256

/* A block's memory, cleared for each block (14 KiB, less than encoding 300 events costs).
 * follows[slot of (kind, actor)]: the actor of the last event of that kind after an event
 * about that actor. A thread's actors follow one another in a pattern (a ping-pong alternates,
 * a loop over actors counts up), which this learns where the last actor of the kind does not. */
struct memory {
    struct kind_memory kind[256];
    uint64_t follows[ACTOR_SLOTS];
    struct actor_memory actor[ACTOR_SLOTS];
};

static inline unsigned slot_of(uint8_t kind, uint64_t actor)
{
    return (unsigned)((actor * 0x9E3779B97F4A7C15ull) >> 56) ^ kind;
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

/* Writes v as a varint at p; returns the end. One-byte values skip the loop. */
static inline uint8_t *put(uint8_t *p, uint64_t v)
{
    if (v < 0x80) {
        *p = (uint8_t)v;
        return p + 1;
    }
    return p + at_varint_put(p, v);
}

/* The previous event of the block, of any kind. */
struct previous {
    uint64_t tsc, actor, msg;
    uint8_t kind;
};

/* What predict found of one event, before any byte of it is written. */
struct predicted {
    unsigned head, actor;
    uint64_t actor_delta, tsc, peer, msg, others;
};

/* Compares each field of one committed event with its prediction and remembers the event.
 * Nothing is written here: a byte store may alias the memory, to the compiler, which would
 * then reload it after every store. */
static inline struct predicted predict(const struct at_event *ev, uint64_t tail, struct memory *m,
                                       struct previous *prev)
{
    uint8_t kind = (uint8_t)(tail >> 56);
    struct kind_memory *before = &m->kind[prev->kind], *k = &m->kind[kind];
    uint64_t *follows = &m->follows[slot_of(kind, prev->actor)];
    struct actor_memory *a = &m->actor[slot_of(kind, ev->actor)];
    uint64_t others = tail & 0x00ffffffffffffffull, gap = ev->tsc - prev->tsc;
    struct predicted e = {
        .actor = ev->actor == *follows                   ? ACTOR_FOLLOWS
                 : ev->actor == prev->actor              ? ACTOR_PREVIOUS
                 : ev->actor == k->actor + k->actor_step ? ACTOR_STEP
                                                         : ACTOR_MISSED,
        .actor_delta = at_zigzag(ev->actor - *follows),
        .tsc = at_zigzag(gap - a->gap),
        .peer = at_zigzag(ev->peer - (a->peer + a->peer_step)),
        .msg = at_zigzag(ev->msg - (a->msg + a->msg_step)),
        .others = others,
    };
    unsigned msg = !e.msg ? 0 : ev->msg == prev->msg ? MSG_PREVIOUS : MSG_MISSED;
    e.msg = msg == MSG_MISSED ? e.msg : 0;
    e.head = e.actor | (e.peer ? PEER_MISSED : 0) | msg |
             (kind != before->next ? KIND_FOLLOWS : 0) | (others != a->others ? OTHERS_FOLLOW : 0) |
             (e.tsc >= 0x100 ? TSC_VARINT : 0);
    before->next = kind;
    *follows = ev->actor;
    k->actor_step = ev->actor - k->actor, k->actor = ev->actor;
    a->peer_step = ev->peer - a->peer, a->peer = ev->peer;
    a->msg_step = ev->msg - a->msg, a->msg = ev->msg;
    a->gap = gap;
    a->others = others;
    *prev = (struct previous){ev->tsc, ev->actor, ev->msg, kind};
    return e;
}

/* Writes what predict found of an event of kind `kind`; returns the end. */
static inline uint8_t *put_event(uint8_t *restrict p, const struct predicted *e, uint8_t kind)
{
    *p++ = (uint8_t)e->head;
    if (e->head & KIND_FOLLOWS)
        *p++ = kind;
    if (e->actor == ACTOR_MISSED)
        p = put(p, e->actor_delta);
    if (e->head & OTHERS_FOLLOW) {
        memcpy(p, &e->others, 8); /* 7 bytes kept: the next byte overwrites the 8th */
        p += 7;
    }
    if (e->head & TSC_VARINT)
        p = put(p, e->tsc);
    else
        *p++ = (uint8_t)e->tsc;
    if (e->peer)
        p = put(p, e->peer);
    if (e->msg)
        p = put(p, e->msg);
    return p;
}

size_t at_events_predict(const struct at_event *slots, uint32_t n, uint8_t *restrict out,
                         struct at_block_info *info)
{
    struct memory m;
    memset(&m, 0, sizeof m);
    struct previous prev = {0};
    uint8_t *p = out;
    uint64_t lo = UINT64_MAX, hi = 0;
    uint32_t count = 0, torn = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* kind, path, core and name are stored as one word with release, after the rest */
        uint64_t tail =
            __atomic_load_n((const uint64_t *)(const void *)&slots[i].name, __ATOMIC_ACQUIRE);
        if ((tail >> 56) == 0) {
            torn++;
            continue;
        }
        uint64_t tsc = slots[i].tsc;
        lo = tsc < lo ? tsc : lo;
        hi = tsc > hi ? tsc : hi;
        struct predicted e = predict(&slots[i], tail, &m, &prev);
        p = put_event(p, &e, (uint8_t)(tail >> 56));
        count++;
    }
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
static inline int get_field(struct reader *r, int missed, uint64_t *last, uint64_t *step,
                            uint64_t *out)
{
    uint64_t z = 0;
    if (missed && get_varint(r, &z) < 0)
        return -1;
    *out = *last + *step + at_unzigzag(z);
    *step = *out - *last;
    *last = *out;
    return 0;
}

/* The event's kind and actor, which choose the memory the rest is predicted from. */
static int get_kind_actor(struct reader *r, unsigned head, struct memory *m,
                          const struct previous *prev, struct at_event *ev)
{
    struct kind_memory *before = &m->kind[prev->kind];
    uint8_t kind = before->next;
    if ((head & KIND_FOLLOWS) && (get_bytes(r, &kind, 1) < 0 || kind == before->next))
        return -1;
    if (kind == 0)
        return -1;
    before->next = kind;
    ev->kind = kind;
    uint64_t *follows = &m->follows[slot_of(kind, prev->actor)], z;
    switch (head & ACTOR_MODE) {
    case ACTOR_FOLLOWS:
        ev->actor = *follows;
        break;
    case ACTOR_PREVIOUS:
        ev->actor = prev->actor;
        break;
    case ACTOR_STEP:
        ev->actor = m->kind[kind].actor + m->kind[kind].actor_step;
        break;
    case ACTOR_MISSED:
        if (get_varint(r, &z) < 0)
            return -1;
        ev->actor = *follows + at_unzigzag(z);
        break;
    }
    *follows = ev->actor;
    struct kind_memory *k = &m->kind[kind];
    k->actor_step = ev->actor - k->actor, k->actor = ev->actor;
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
    struct actor_memory *a = &m->actor[slot_of(ev->kind, ev->actor)];
    uint64_t z;
    if (((head & OTHERS_FOLLOW) && get_bytes(r, &a->others, 7) < 0) || get_tsc(r, head, &z) < 0)
        return -1;
    a->gap += at_unzigzag(z);
    ev->tsc = prev->tsc + a->gap;
    if (get_field(r, head & PEER_MISSED, &a->peer, &a->peer_step, &ev->peer) < 0 ||
        get_field(r, head & MSG_MISSED, &a->msg, &a->msg_step, &ev->msg) < 0)
        return -1;
    if (head & MSG_PREVIOUS) {
        if (head & MSG_MISSED)
            return -1;
        ev->msg = prev->msg;
        a->msg_step -= a->msg - prev->msg;
        a->msg = prev->msg;
    }
    ev->name = (uint32_t)a->others;
    ev->core = (uint16_t)(a->others >> 32);
    ev->path = (uint8_t)(a->others >> 48);
    *prev = (struct previous){ev->tsc, ev->actor, ev->msg, ev->kind};
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
