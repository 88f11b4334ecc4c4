/* Unit tests of common/: varints, zigzag, crc32c, the columnar event block and the predicted one
 * (encode, decode, torn slots, wraps, bounds, malformed input). Prints "ok - name" or
 * "not ok - name" per check; exits 1 if any failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "at_codec.h"

static void test_varint(void)
{
    static const struct {
        uint64_t v;
        size_t len;
    } cases[] = {
        {0, 1},           {1, 1},           {127, 1},
        {128, 2},         {16383, 2},       {16384, 3},
        {UINT32_MAX, 5},  {1ull << 56, 9},  {(1ull << 63) - 1, 9},
        {1ull << 63, 10}, {UINT64_MAX, 10},
    };
    int lengths = 1, round = 1, short_input = 1;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t buf[AT_VARINT_MAX];
        size_t n = at_varint_put(buf, cases[i].v);
        lengths &= n == cases[i].len;
        const uint8_t *p = buf;
        uint64_t v = 0;
        round &= at_varint_get(&p, buf + n, &v) == 0 && v == cases[i].v && p == buf + n;
        p = buf;
        short_input &= at_varint_get(&p, buf + n - 1, &v) == -1 && p == buf;
    }
    check(lengths, "varint lengths 1-10 bytes at the 7-bit boundaries");
    check(round, "varint round trip of edge values");
    check(short_input, "varint cut short is rejected and does not advance");

    uint8_t eleven[11];
    memset(eleven, 0x80, 10);
    eleven[10] = 0;
    const uint8_t *p = eleven;
    uint64_t v;
    check(at_varint_get(&p, eleven + 11, &v) == -1, "varint longer than 10 bytes is rejected");
    p = eleven;
    check(at_varint_get(&p, eleven, &v) == -1, "varint from an empty input is rejected");
}

static void test_zigzag(void)
{
    check(at_zigzag(0) == 0 && at_zigzag((uint64_t)-1) == 1 && at_zigzag(1) == 2 &&
              at_zigzag((uint64_t)-2) == 3,
          "zigzag of 0, -1, 1, -2 is 0, 1, 2, 3");
    check(at_zigzag((uint64_t)INT64_MAX) == UINT64_MAX - 1 &&
              at_zigzag((uint64_t)INT64_MIN) == UINT64_MAX,
          "zigzag of INT64_MAX and INT64_MIN");
    int inverse = 1;
    for (int i = 0; i < 100000; i++) {
        uint64_t x = rnd() >> (rnd() % 64);
        inverse &= at_unzigzag(at_zigzag(x)) == x && at_unzigzag(at_zigzag(-x)) == -x;
    }
    check(inverse, "unzigzag inverts zigzag on random values");
}

/* Bit-at-a-time crc32c, the definition the fast versions must match. */
static uint32_t crc_reference(const uint8_t *p, size_t len)
{
    uint32_t c = 0xFFFFFFFF;
    while (len--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78 & (0 - (c & 1)));
    }
    return ~c;
}

static void test_crc(void)
{
    check(at_crc32c(0, "123456789", 9) == 0xE3069283, "crc32c check value 0xE3069283");
    check(at_crc32c(0, "", 0) == 0, "crc32c of nothing is 0");
    uint8_t data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)rnd();
    int same = 1, chained = 1;
    for (size_t off = 0; off < 8; off++) {
        for (size_t len = 0; len + off <= sizeof data; len += 7) {
            uint32_t whole = at_crc32c(0, data + off, len);
            same &= whole == crc_reference(data + off, len);
            size_t half = len / 3;
            chained &=
                at_crc32c(at_crc32c(0, data + off, half), data + off + half, len - half) == whole;
        }
    }
    check(same, "crc32c matches the bitwise definition at every alignment and length");
    check(chained, "crc32c continues across split buffers");
}

static struct at_event random_event(void)
{
    static const uint64_t extremes[] = {0, 1, UINT64_MAX, 1ull << 63, (1ull << 63) - 1};
    struct at_event e;
    uint64_t pick = rnd();
    e.tsc = pick % 5 == 0 ? extremes[rnd() % 5] : rnd();
    e.actor = pick % 3 == 0 ? extremes[rnd() % 5] : rnd() % 1000;
    e.peer = pick % 7 == 0 ? extremes[rnd() % 5] : rnd() >> (rnd() % 64);
    e.msg = rnd() >> (rnd() % 64);
    e.name = pick % 11 == 0 ? UINT32_MAX : (uint32_t)(rnd() % 50);
    e.core = pick % 13 == 0 ? UINT16_MAX : (uint16_t)(rnd() % 64);
    e.path = (uint8_t)rnd();
    e.kind = (uint8_t)(1 + rnd() % 255);
    return e;
}

static int same_event(const struct at_event *a, const struct at_event *b)
{
    return a->tsc == b->tsc && a->actor == b->actor && a->peer == b->peer && a->msg == b->msg &&
           a->name == b->name && a->core == b->core && a->path == b->path && a->kind == b->kind;
}

/* Decodes what at_events_encode writes. */
static int decode(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                  struct at_event *out)
{
    return at_events_decode(in, len, count, first_tsc, AT_DELTA_SAME_KIND, out);
}

/* Decodes what at_events_predict writes, with the columns' signature. */
static int unpredict(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                     struct at_event *out)
{
    (void)first_tsc;
    return at_events_unpredict(in, len, count, out);
}

/* One of the two encodings: its encoder and decoder. */
struct codec {
    size_t (*encode)(const struct at_event *, uint32_t, uint8_t *, struct at_block_info *);
    int (*decode)(const uint8_t *, size_t, uint32_t, uint64_t, struct at_event *);
};
static const struct codec columns = {at_events_encode, decode};
static const struct codec predicted = {at_events_predict, unpredict};

/* Encodes slots[0..n) with c, decodes, and compares with the committed slots. */
static int round_trip_with(const struct codec *c, const struct at_event *slots, uint32_t n)
{
    uint8_t *buf = malloc(at_events_encode_bound(n) + 1);
    struct at_event *out = malloc((n + 1) * sizeof *out);
    struct at_block_info info;
    size_t len = c->encode(slots, n, buf, &info);
    int ok = len <= at_events_encode_bound(n) &&
             c->decode(buf, len, info.count, info.first_tsc, out) == 0;
    uint32_t k = 0, torn = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < n && ok; i++) {
        if (slots[i].kind == 0) {
            torn++;
            continue;
        }
        ok &= same_event(&slots[i], &out[k++]);
        lo = slots[i].tsc < lo ? slots[i].tsc : lo;
        hi = slots[i].tsc > hi ? slots[i].tsc : hi;
    }
    ok &= k == info.count && torn == info.torn;
    if (k > 0)
        ok &= info.first_tsc == lo && info.last_tsc == hi;
    free(buf);
    free(out);
    return ok;
}

static int round_trip(const struct at_event *slots, uint32_t n)
{
    return round_trip_with(&columns, slots, n);
}

/* check() with the name prefixed by "prefix: " (none when prefix is ""). */
static void check_as(int ok, const char *prefix, const char *name)
{
    char full[200];
    snprintf(full, sizeof full, "%s%s%s", prefix, *prefix ? ": " : "", name);
    check(ok, full);
}

/* Random events, torn slots and empty blocks through codec c (checks named after it). */
static void test_round_trip(const struct codec *c, const char *name)
{
    enum { N = 4096 };
    struct at_event *slots = malloc(N * sizeof *slots);
    int ok = 1;
    for (int rep = 0; rep < 50; rep++) {
        uint32_t n = (uint32_t)(rnd() % N) + 1;
        for (uint32_t i = 0; i < n; i++)
            slots[i] = random_event();
        ok &= round_trip_with(c, slots, n);
    }
    check_as(ok, name, "encode -> decode round trip of random events with extreme values");

    for (uint32_t i = 0; i < 1000; i++)
        slots[i] = random_event();
    int torn_ok = 1;
    for (uint32_t i = 0; i < 1000; i += 1 + (uint32_t)(rnd() % 5))
        slots[i].kind = 0;
    slots[0].kind = 0;
    slots[999].kind = 0;
    torn_ok &= round_trip_with(c, slots, 1000);
    check_as(torn_ok, name, "torn slots (kind 0) are skipped and counted, at the ends too");

    for (uint32_t i = 0; i < 10; i++)
        slots[i].kind = 0;
    struct at_block_info info;
    uint8_t buf[500];
    check_as(c->encode(slots, 10, buf, &info) == 0 && info.count == 0 && info.torn == 10, name,
             "a block of only torn slots encodes to nothing");
    check_as(c->encode(slots, 0, buf, &info) == 0 && info.count == 0, name,
             "an empty block encodes to nothing");
    free(slots);
}

/* Events whose every column takes its largest varint reach the bound exactly. */
static void test_bound(void)
{
    enum { N = 64 };
    struct at_event slots[N];
    for (uint32_t i = 0; i < N; i++) {
        uint64_t far = i % 2 ? 0 : 1ull << 63;
        slots[i] = (struct at_event){.tsc = far,
                                     .actor = far,
                                     .peer = far,
                                     .msg = far,
                                     .name = UINT32_MAX,
                                     .core = UINT16_MAX,
                                     .path = 255,
                                     .kind = 255};
    }
    uint8_t buf[N * 50];
    struct at_block_info info;
    size_t len = at_events_encode(slots, N, buf, &info);
    check(at_events_encode_bound(N) == N * 50, "bound is 50 bytes an event");
    check(len == at_events_encode_bound(N), "worst-case events fill the bound exactly");
    check(round_trip(slots, N), "worst-case events round trip");
}

static void test_malformed(void)
{
    struct at_event slots[20], out[21];
    for (int i = 0; i < 20; i++)
        slots[i] = random_event();
    uint8_t buf[20 * 50 + 8];
    struct at_block_info info;
    size_t len = at_events_encode(slots, 20, buf, &info);

    int truncated = 1;
    for (size_t cut = 0; cut < len; cut++)
        truncated &= decode(buf, cut, 20, info.first_tsc, out) == -EINVAL;
    check(truncated, "every truncation of the columns is rejected with -EINVAL");

    buf[len] = 0;
    check(decode(buf, len + 1, 20, info.first_tsc, out) == -EINVAL,
          "bytes after the last column are rejected");
    check(decode(buf, len, 21, info.first_tsc, out) == -EINVAL,
          "a count larger than the columns hold is rejected");
    uint8_t kind = buf[3];
    buf[3] = 0;
    check(decode(buf, len, 20, info.first_tsc, out) == -EINVAL, "kind 0 in a block is rejected");
    buf[3] = kind;
    check(decode(NULL, 0, 0, 0, out) == 0, "an empty block decodes");
    check(decode(buf, 1, 0, 0, out) == -EINVAL, "bytes in a block of 0 events");

    /* kind, path, core = 65536 (3 bytes), then 1-byte columns. */
    uint8_t big_core[] = {1, 0, 0x80, 0x80, 0x04, 0, 0, 0, 0, 0};
    check(decode(big_core, sizeof big_core, 1, 0, out) == -EINVAL,
          "a core above 65535 is rejected");
    uint8_t big_name[] = {1, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10};
    check(decode(big_name, sizeof big_name, 1, 0, out) == -EINVAL,
          "a name above 2^32-1 is rejected");
    uint8_t ok_one[] = {3, 7, 2, 4, 6, 8, 10, 5};
    check(decode(ok_one, sizeof ok_one, 1, 100, out) == 0 && out[0].kind == 3 && out[0].path == 7 &&
              out[0].core == 2 && out[0].tsc == 102 && out[0].actor == 3 && out[0].peer == 4 &&
              out[0].msg == 5 && out[0].name == 5,
          "a hand-written one-event block decodes to the documented fields");
    uint8_t long_varint[20] = {1, 0};
    memset(long_varint + 2, 0x80, 11);
    check(decode(long_varint, 20, 1, 0, out) == -EINVAL,
          "an 11-byte varint in a column is rejected");
}

/* Three events of kinds 3, 8, 3, hand-written: actor, peer and msg deltas are taken against the
 * previous event of the same kind (format 2), or against the previous event (format 1). */
static void test_delta_base(void)
{
    uint8_t columns[] = {
        3, 8, 3, /* kind */
        0, 0, 0, /* path */
        0, 0, 0, /* core */
        0, 2, 2, /* tsc: zigzag deltas from first_tsc, +1 each */
        4, 6, 2, /* actor: zigzag 2, 3, 1 */
        0, 0, 0, /* peer */
        8, 0, 2, /* msg: zigzag 4, 0, 1 */
        0, 0, 0, /* name */
    };
    struct at_event out[3];
    check(at_events_decode(columns, sizeof columns, 3, 10, AT_DELTA_SAME_KIND, out) == 0 &&
              out[0].actor == 2 && out[1].actor == 3 && out[2].actor == 3 && out[0].msg == 4 &&
              out[1].msg == 0 && out[2].msg == 5 && out[2].tsc == 12,
          "same-kind deltas: the second send continues from the first, past the park");
    check(at_events_decode(columns, sizeof columns, 3, 10, AT_DELTA_PREVIOUS, out) == 0 &&
              out[0].actor == 2 && out[1].actor == 5 && out[2].actor == 6 && out[0].msg == 4 &&
              out[1].msg == 4 && out[2].msg == 5 && out[2].tsc == 12,
          "format 1 deltas: each event continues from the one before");

    /* a send, park, recv cycle: the encoder's same-kind deltas keep msg to one byte each */
    struct at_event cycle[300];
    for (uint32_t i = 0; i < 300; i++) {
        uint32_t kind = i % 3 == 0 ? 3 : i % 3 == 1 ? 8 : 4;
        cycle[i] = (struct at_event){.tsc = 1000 + i,
                                     .actor = 1,
                                     .kind = (uint8_t)kind,
                                     .msg = kind == 8 ? 0 : (1ull << 32) + i};
    }
    uint8_t buf[300 * 50];
    struct at_block_info info;
    size_t len = at_events_encode(cycle, 300, buf, &info);
    /* kind, path, core, tsc, actor, peer, name: 1 byte each; msg 1 except each kind's first */
    check(len <= 300 * 8 + 3 * 4, "msg deltas of a send/park/recv cycle take one byte each");
    check(round_trip(cycle, 300), "a send/park/recv cycle round trips");
}

/* ---- The predicted encoding ---------------------------------------------------------------- */

/* Few kinds and actors, values that repeat or step, so that every prediction is met and missed
 * in turn; and every kind. */
static void test_predicted_patterns(void)
{
    enum { N = 4096 };
    struct at_event *slots = malloc(N * sizeof *slots);
    int ok = 1;
    for (int rep = 0; rep < 50; rep++) {
        uint32_t n = (uint32_t)(rnd() % N) + 1;
        uint64_t tsc = rnd();
        for (uint32_t i = 0; i < n; i++) {
            uint64_t pick = rnd();
            tsc += pick % 4 == 0 ? rnd() >> (rnd() % 64) : pick % 300;
            slots[i] = (struct at_event){.tsc = tsc,
                                         .actor = 1 + pick % 3,
                                         .peer = (pick >> 8) % 2,
                                         .msg = i / 2 + (pick >> 9) % 2,
                                         .name = (pick >> 10) % 2,
                                         .core = (pick >> 11) % 2,
                                         .path = (pick >> 12) % 2,
                                         .kind = (uint8_t)(1 + (pick >> 13) % 4)};
            if ((pick >> 16) % 50 == 0)
                slots[i].kind = 0;
        }
        ok &= round_trip_with(&predicted, slots, n);
    }
    check(ok, "predicted: round trip of repeating and stepping events, torn slots among them");

    for (uint32_t i = 0; i < 255 * 4; i++)
        slots[i] = (struct at_event){
            .tsc = i, .actor = i % 255, .msg = i, .kind = (uint8_t)(1 + (i * 7) % 255)};
    check(round_trip_with(&predicted, slots, 255 * 4),
          "predicted: every kind from 1 to 255 round trips");
    free(slots);
}

/* Values that wrap past 2^64, deltas of 2^63 and more, and the largest event. */
static void test_predicted_edges(void)
{
    enum { N = 256 };
    struct at_event slots[N];
    for (uint32_t i = 0; i < N; i++)
        slots[i] = (struct at_event){.tsc = UINT64_MAX - 100 + i * 3,
                                     .actor = UINT64_MAX - 3 + i,
                                     .peer = (uint64_t)0 - i,
                                     .msg = UINT64_MAX - 50 + 2 * i,
                                     .kind = 3};
    check(round_trip_with(&predicted, slots, N), "predicted: tsc, actor and msg wrap past 2^64");

    for (uint32_t i = 0; i < N; i++) {
        uint64_t far = i % 2 ? 0 : 1ull << 63;
        slots[i] = (struct at_event){.tsc = far + i % 3,
                                     .actor = far ^ (i % 5),
                                     .peer = ~far - i,
                                     .msg = far + i * i,
                                     .name = UINT32_MAX - i % 2,
                                     .core = UINT16_MAX - i % 2,
                                     .path = (uint8_t)(255 - i % 2),
                                     .kind = (uint8_t)(255 - i % 3)};
    }
    uint8_t buf[N * 50];
    struct at_block_info info;
    size_t len = at_events_predict(slots, N, buf, &info);
    check(len <= at_events_encode_bound(N), "predicted: huge deltas stay within the bound");
    check(round_trip_with(&predicted, slots, N), "predicted: deltas of 2^63 round trip");
}

/* A ping-pong on one thread (refrt's pingpong): send, schedule, step_end, recv, step_begin,
 * alternating between two actors, message ids counting up: after the first rounds every
 * field is predicted, and an event takes its first byte and a tsc byte. */
static void test_predicted_size(void)
{
    enum { N = 1000 };
    static const uint8_t kinds[] = {3, 7, 6, 4, 5};
    struct at_event slots[N];
    uint64_t tsc = 1000000;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t round = i / 5;
        uint64_t to = 1 + (round + 1) % 2, from = 1 + round % 2, msg = 100 + round;
        uint8_t kind = kinds[i % 5];
        tsc += 30 + (i * 7919) % 100; /* irregular gaps */
        slots[i] = (struct at_event){.tsc = tsc,
                                     .kind = kind,
                                     .name = (uint32_t)to,
                                     .actor = kind == 6 ? from : to,
                                     .peer = kind == 6 || kind == 5 ? 0 : from,
                                     .msg = kind == 7   ? 0
                                            : kind == 6 ? msg - 1
                                                        : msg};
    }
    uint8_t buf[N * 50];
    struct at_block_info info;
    size_t len = at_events_predict(slots, N, buf, &info);
    check(len <= 2 * N + N / 5, "predicted: a ping-pong takes about 2 bytes an event");
    check(round_trip_with(&predicted, slots, N), "predicted: a ping-pong round trips");
}

static void test_predicted_malformed(void)
{
    struct at_event slots[40], out[41];
    for (int i = 0; i < 40; i++)
        slots[i] = random_event();
    uint8_t buf[40 * 50 + 8];
    struct at_block_info info;
    size_t len = at_events_predict(slots, 40, buf, &info);
    int truncated = 1;
    for (size_t cut = 0; cut < len; cut++)
        truncated &= at_events_unpredict(buf, cut, 40, out) == -EINVAL;
    check(truncated, "predicted: every truncation is rejected with -EINVAL");
    buf[len] = 0;
    check(at_events_unpredict(buf, len + 1, 40, out) == -EINVAL,
          "predicted: bytes after the last event are rejected");
    check(at_events_unpredict(buf, len, 41, out) == -EINVAL,
          "predicted: a count larger than the bytes hold is rejected");
    check(at_events_unpredict(NULL, 0, 0, out) == 0, "predicted: an empty block decodes");

    /* FORMAT.md 4.2: first byte 0x10 (the kind follows), kind 3, tsc residual 5 (zigzag 10):
     * tsc 5, kind 3, every other field 0 */
    uint8_t one[] = {0x10, 3, 10};
    check(at_events_unpredict(one, sizeof one, 1, out) == 0 && out[0].kind == 3 &&
              out[0].tsc == 5 && out[0].actor == 0 && out[0].msg == 0 && out[0].name == 0,
          "predicted: a hand-written one-event block decodes to the documented fields");
    /* the same with the actor missed (zigzag 8: 4), msg missed (zigzag 2: 1), and name, core
     * and path following (7 bytes) */
    uint8_t full[] = {0x10 | 0x20 | 0x08 | 3, 3, 8, 7, 0, 0, 0, 2, 0, 9, 10, 2};
    check(at_events_unpredict(full, sizeof full, 1, out) == 0 && out[0].actor == 4 &&
              out[0].msg == 1 && out[0].name == 7 && out[0].core == 2 && out[0].path == 9 &&
              out[0].tsc == 5,
          "predicted: missed fields and the others decode to the documented fields");
    uint8_t kind0[] = {0x10, 0, 10};
    check(at_events_unpredict(kind0, sizeof kind0, 1, out) == -EINVAL,
          "predicted: kind 0 is rejected");
    uint8_t no_kind[] = {0x00, 10};
    check(at_events_unpredict(no_kind, sizeof no_kind, 1, out) == -EINVAL,
          "predicted: a first event without its kind (predicted 0) is rejected");
    uint8_t short_varint[] = {0x10 | 0x40, 3, 0x7f};
    check(at_events_unpredict(short_varint, sizeof short_varint, 1, out) == -EINVAL,
          "predicted: a tsc varint below 256 is rejected (it takes one byte)");
    uint8_t both_msg[] = {0x10 | 0x08 | 0x80, 3, 10, 2};
    check(at_events_unpredict(both_msg, sizeof both_msg, 1, out) == -EINVAL,
          "predicted: msg both missed and the previous event's is rejected");
}

int main(void)
{
    test_varint();
    test_zigzag();
    test_crc();
    test_round_trip(&columns, "");
    test_round_trip(&predicted, "predicted");
    test_bound();
    test_malformed();
    test_delta_base();
    test_predicted_patterns();
    test_predicted_edges();
    test_predicted_size();
    test_predicted_malformed();
    return failures ? 1 : 0;
}
