/* Unit tests of common/: varints, zigzag, crc32c, the columnar event block and the predicted one
 * (encode, decode, torn slots, wraps, bounds, malformed input), with a clock step, a lattice or
 * neither.
 * Prints "ok - name" or "not ok - name" per check; exits 1 if any failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

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

/* Decodes what at_events_encode writes without a step. */
static int decode(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                  struct at_event *out)
{
    return at_events_decode(in, len, count, first_tsc, AT_DELTA_SAME_KIND, out, AT_ENC_RAW);
}

static size_t encode(const struct at_event *slots, uint32_t n, uint8_t *out,
                     struct at_block_info *info)
{
    return at_events_encode(slots, n, out, info, NULL);
}

/* The columns with a clock step (encodings 4 and 5): test_step is the step. */
static uint32_t test_step;

static size_t encode_stepped(const struct at_event *slots, uint32_t n, uint8_t *out,
                             struct at_block_info *info)
{
    struct at_tsc_lattice step = {.period = test_step, .count = 1};
    return at_events_encode(slots, n, out, info, &step);
}

static int decode_stepped(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                          struct at_event *out)
{
    return at_events_decode(in, len, count, first_tsc, AT_DELTA_SAME_KIND, out, AT_ENC_STEPPED);
}

/* The columns with a clock lattice (encodings 6 and 7): test_lattice is the lattice. */
static struct at_tsc_lattice test_lattice;

static size_t encode_lattice(const struct at_event *slots, uint32_t n, uint8_t *out,
                             struct at_block_info *info)
{
    return at_events_encode(slots, n, out, info, &test_lattice);
}

static int decode_lattice(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                          struct at_event *out)
{
    return at_events_decode(in, len, count, first_tsc, AT_DELTA_SAME_KIND, out, AT_ENC_LATTICE);
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
static const struct codec columns = {encode, decode};
static const struct codec stepped = {encode_stepped, decode_stepped};
static const struct codec lattice = {encode_lattice, decode_lattice};
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
    uint8_t buf[520];
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
    uint8_t buf[N * 64];
    struct at_block_info info;
    size_t len = encode(slots, N, buf, &info);
    check(at_events_encode_bound(N) == N * 64, "bound is 64 bytes an event");
    check(len == N * 50, "worst-case events take 50 bytes an event without a step");
    check(round_trip(slots, N), "worst-case events round trip");
    int within = 1;
    for (test_step = 2; test_step <= 255; test_step++)
        within &= encode_stepped(slots, N, buf, &info) <= at_events_encode_bound(N) &&
                  round_trip_with(&stepped, slots, N);
    check(within, "with every step from 2 to 255, worst-case events stay within the bound and "
                  "round trip");
    /* lattices of 2 to 8 residues, periods 16 to 255: one event and all 64, every tsc off */
    within = 1;
    for (uint32_t period = 16; period <= 255; period++) {
        for (uint32_t count = 2; count <= AT_LATTICE_MAX; count++) {
            test_lattice = (struct at_tsc_lattice){.period = period, .count = count};
            for (uint32_t j = 0; j < count; j++)
                test_lattice.residue[j] = (uint8_t)(period - 2 * (count - j));
            /* a tick past the first residue, near 0 and near 2^63 in turn */
            uint64_t high = (1ull << 63) / period * period;
            for (uint32_t i = 0; i < N; i++)
                slots[i].tsc = (i % 2 ? 0 : high) + test_lattice.residue[0] + 1;
            within &= encode_lattice(slots, 1, buf, &info) <= at_events_encode_bound(1) &&
                      encode_lattice(slots, N, buf, &info) <= at_events_encode_bound(N) &&
                      info.off_step == N - 1 && round_trip_with(&lattice, slots, N) &&
                      round_trip_with(&lattice, slots, 1);
        }
    }
    check(within, "with lattices of 2 to 8 residues, periods 16 to 255, worst-case events off "
                  "them stay within the bound, one event or many, and round trip");
}

/* Whether block[0..len) ends with the list of two events off the clock, at indexes 5 and 9,
 * with remainders 3 and `rest`: count 2, gap 5, 3, gap 4, rest. */
static int lists_5_and_9(const uint8_t *block, size_t len, uint8_t rest)
{
    const uint8_t *tail = block + len - 5;
    return len > 5 && tail[0] == 2 && tail[1] == 5 && tail[2] == 3 && tail[3] == 4 &&
           tail[4] == rest;
}

/* Whether codec c rejects block[0..len) of count events, whose list lists_5_and_9 checked, with
 * its last remainder 0 or `too_far`, or its last gap 0; the block is as it was after. */
static int rejects_bad_list(const struct codec *c, uint8_t *block, size_t len, uint32_t count,
                            uint64_t first_tsc, uint8_t too_far)
{
    struct at_event *out = malloc(count * sizeof *out);
    uint8_t rest = block[len - 1], gap = block[len - 2];
    int refused = 1;
    block[len - 1] = too_far;
    refused &= c->decode(block, len, count, first_tsc, out) == -EINVAL;
    block[len - 1] = 0;
    refused &= c->decode(block, len, count, first_tsc, out) == -EINVAL;
    block[len - 1] = rest;
    block[len - 2] = 0;
    refused &= c->decode(block, len, count, first_tsc, out) == -EINVAL;
    block[len - 2] = gap;
    free(out);
    return refused;
}

/* Timestamps in a clock's steps: exact whatever the deltas (quotient and remainder, negative
 * deltas rounded down), smaller where they are the step's multiples. */
static void test_stepped(void)
{
    enum { N = 600 };
    struct at_event slots[N];
    int exact = 1;
    for (test_step = 2; test_step <= 255; test_step++) {
        uint64_t tsc = rnd();
        for (uint32_t i = 0; i < N; i++) {
            slots[i] = random_event();
            /* steps up and down, large and small, on and off the step */
            uint64_t pick = rnd() % 6;
            tsc += pick == 0   ? rnd()
                   : pick == 1 ? 0 - (rnd() % 100000)
                   : pick == 2 ? (rnd() % 1000) * test_step
                   : pick == 3 ? 0 - (rnd() % 1000) * test_step
                   : pick == 4 ? (uint64_t)test_step - 1
                               : 0;
            slots[i].tsc = tsc;
        }
        exact &= round_trip_with(&stepped, slots, N);
    }
    check(exact, "steps 2 to 255: every tsc comes back, across +-2^63, off the step and below 0");

    uint64_t tsc = 1ull << 40;
    for (uint32_t i = 0; i < N; i++) {
        slots[i] = (struct at_event){.tsc = tsc, .actor = 1, .kind = 1};
        tsc += 26 * (10 + rnd() % 200); /* deltas of 260 to 5434: two varint bytes each */
    }
    uint8_t plain[N * 64], in_steps[N * 64];
    struct at_block_info info;
    size_t plain_len = encode(slots, N, plain, &info);
    test_step = 26;
    size_t stepped_len = encode_stepped(slots, N, in_steps, &info);
    uint8_t packed[2][ZSTD_COMPRESSBOUND(N * 64)];
    size_t plain_packed = ZSTD_compress(packed[0], sizeof packed[0], plain, plain_len, 1);
    size_t stepped_packed = ZSTD_compress(packed[1], sizeof packed[1], in_steps, stepped_len, 1);
    check(!ZSTD_isError(plain_packed) && !ZSTD_isError(stepped_packed) &&
              stepped_packed * 4 < plain_packed * 3 && round_trip_with(&stepped, slots, N),
          "multiples of the step: a quarter smaller after zstd (quotients of a byte)");

    struct at_event out[N + 1];
    int truncated = 1;
    for (size_t cut = 0; cut < stepped_len; cut++)
        truncated &= decode_stepped(in_steps, cut, N, info.first_tsc, out) == -EINVAL;
    check(truncated, "stepped: every truncation is rejected");
    check(in_steps[stepped_len - 1] == 0, "stepped: no event off the step, a count of 0 last");

    /* two events off the step, at indexes 5 and 9: remainders 3 and 25 */
    for (uint32_t i = 5; i < N; i++)
        slots[i].tsc += 3 + (i >= 9 ? 25 : 0);
    size_t off_len = encode_stepped(slots, N, in_steps, &info);
    check(round_trip_with(&stepped, slots, N) && info.off_step == 2 &&
              lists_5_and_9(in_steps, off_len, 25),
          "stepped: events off the step listed last, as count, then gap and remainder each, "
          "and counted");
    int refused = rejects_bad_list(&stepped, in_steps, off_len, N, info.first_tsc, 26);
    check(refused, "stepped: a remainder of 0 or not below the step, a gap of 0 are rejected");

    /* two events by hand: step 26, kinds 1 1, paths 0 0, cores 0 0, tsc first 0 and quotient 2,
     * actor, peer, msg and name 0 each, then one event off the step: gap 1, remainder 5 */
    uint8_t hand[] = {26, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 5};
    int hand_ok = decode_stepped(hand, sizeof hand, 2, 1000, out) == 0 && out[0].tsc == 1000 &&
                  out[1].tsc == 1000 + 2 * 26 + 5;
    hand[18] = 2; /* past the last event */
    hand_ok &= decode_stepped(hand, sizeof hand, 2, 1000, out) == -EINVAL;
    check(hand_ok, "stepped: a hand-written block decodes to the documented tsc; an index past "
                   "the last event is rejected");
    int steps_refused = 1;
    for (uint8_t bad = 0; bad < 2; bad++) {
        in_steps[0] = bad;
        steps_refused &= decode_stepped(in_steps, stepped_len, N, info.first_tsc, out) == -EINVAL;
    }
    check(steps_refused, "stepped: a step of 0 or 1 is rejected");
}

/* A clock on a lattice: period 49, residues 0 and 24, as a clock whose 100 MHz ticks add 24.5
 * to it each (24 and 25 in turn): 2.45 GHz. */
static const struct at_tsc_lattice half_ticks = {.period = 49, .count = 2, .residue = {0, 24}};

/* The point n of a clock that adds 24.5 ticks every 10 ns. */
static uint64_t half_tick(uint64_t n)
{
    return n * 49 / 2;
}

/* Timestamps on a lattice: exact whatever they are (on it, off it, before its first residue,
 * across +-2^63), smaller where they are on it; the list of those off it; malformed blocks. */
static void test_lattices(void)
{
    enum { N = 600 };
    static const struct at_tsc_lattice some[] = {
        {.period = 49, .count = 2, .residue = {0, 24}},
        {.period = 49, .count = 2, .residue = {10, 35}},
        {.period = 45, .count = 2, .residue = {0, 22}},
        {.period = 255, .count = 8, .residue = {3, 40, 70, 100, 130, 160, 190, 254}},
        {.period = 9, .count = 4, .residue = {0, 2, 4, 6}},
        {.period = 2, .count = 2, .residue = {0, 1}},
    };
    struct at_event slots[N];
    int exact = 1;
    for (size_t l = 0; l < sizeof some / sizeof some[0]; l++) {
        test_lattice = some[l];
        for (int rep = 0; rep < 20; rep++) {
            uint64_t tsc = rep == 0 ? 0 : rep == 1 ? UINT64_MAX - 5000 : rnd();
            for (uint32_t i = 0; i < N; i++) {
                slots[i] = random_event();
                uint64_t pick = rnd() % 7;
                tsc += pick == 0   ? rnd()
                       : pick == 1 ? 0 - (rnd() % 100000)
                       : pick == 2 ? (rnd() % 1000) * test_lattice.period
                       : pick == 3 ? 0 - (rnd() % 1000) * test_lattice.period
                       : pick == 4 ? 1
                       : pick == 5 ? (uint64_t)(test_lattice.residue[1] - test_lattice.residue[0])
                                   : 0;
                slots[i].tsc = tsc;
            }
            exact &= round_trip_with(&lattice, slots, N);
        }
    }
    check(exact, "lattices: every tsc comes back, on and off the lattice, near 0 and 2^64, "
                 "across +-2^63");
    test_round_trip(&lattice, "lattice 255, 8 residues");
    test_lattice = half_ticks;
    test_round_trip(&lattice, "lattice 49, residues 0 and 24");

    /* a clock at 2.45 GHz read every 100 to 2000 ns: on its lattice, off any step */
    uint64_t n = 1ull << 36;
    for (uint32_t i = 0; i < N; i++) {
        slots[i] = (struct at_event){.tsc = half_tick(n), .actor = 1, .kind = 1};
        n += 10 + rnd() % 190;
    }
    uint8_t plain[N * 64], on_lattice[N * 64];
    struct at_block_info info;
    size_t plain_len = encode(slots, N, plain, &info);
    size_t lattice_len = encode_lattice(slots, N, on_lattice, &info);
    uint8_t packed[2][ZSTD_COMPRESSBOUND(N * 64)];
    size_t plain_packed = ZSTD_compress(packed[0], sizeof packed[0], plain, plain_len, 1);
    size_t lattice_packed = ZSTD_compress(packed[1], sizeof packed[1], on_lattice, lattice_len, 1);
    check(!ZSTD_isError(plain_packed) && !ZSTD_isError(lattice_packed) &&
              lattice_packed * 4 < plain_packed * 3 && info.off_step == 0 &&
              round_trip_with(&lattice, slots, N),
          "a clock adding 24 and 25 in turn: on lattice 49 {0, 24}, a quarter smaller after zstd, "
          "no event off it");
    test_step = 49;
    struct at_block_info step_info;
    encode_stepped(slots, N, plain, &step_info);
    check(step_info.off_step > N / 3, "the same clock: a third or more of its deltas off step 49");

    struct at_event out[N + 1];
    int truncated = 1;
    for (size_t cut = 0; cut < lattice_len; cut++)
        truncated &= decode_lattice(on_lattice, cut, N, info.first_tsc, out) == -EINVAL;
    check(truncated, "lattice: every truncation is rejected");
    check(lattice_len > 4 && memcmp(on_lattice, (uint8_t[]){49, 2, 0, 24}, 4) == 0 &&
              on_lattice[lattice_len - 1] == 0,
          "lattice: period, count and residues first; no event off it, a count of 0 last");

    /* two events off it, at indexes 5 and 9: 3 ticks past a point of class 0 (gap 24), and
     * 24 past one of class 1 (gap 25) */
    while (half_tick(n) % 49 != 0)
        n++;
    for (uint32_t i = 0; i < N; i++)
        slots[i].tsc = half_tick(n + 2 * i) + (i == 5 ? 3 : 0);
    slots[9].tsc = half_tick(n + 19) + 24;
    size_t off_len = encode_lattice(slots, N, on_lattice, &info);
    check(round_trip_with(&lattice, slots, N) && info.off_step == 2 &&
              lists_5_and_9(on_lattice, off_len, 24),
          "lattice: events off it listed last, as count, then gap and remainder each, and "
          "counted");
    int refused = rejects_bad_list(&lattice, on_lattice, off_len, N, info.first_tsc, 25);
    on_lattice[off_len - 3] = 24; /* at index 5, a class-0 point: its gap is 24 */
    refused &= decode_lattice(on_lattice, off_len, N, info.first_tsc, out) == -EINVAL;
    on_lattice[off_len - 3] = 3;
    check(refused, "lattice: a remainder of 0 or reaching the next point, a gap of 0 are "
                   "rejected");

    /* two events by hand: lattice 49 {0, 24}; kinds 1 1, paths 0 0, cores 0 0; tsc first 0
     * (1000 = 20 * 49 + 20: index 40, 20 ticks past the point 980) and index delta 2 (index 42,
     * the point 21 * 49 = 1029), actor, peer, msg and name 0 each, then one event off it: gap
     * 1, remainder 7 */
    uint8_t hand[] = {49, 2, 0, 24, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 7};
    int hand_ok = decode_lattice(hand, sizeof hand, 2, 1000, out) == 0 && out[0].tsc == 1000 &&
                  out[1].tsc == 1029 + 7;
    hand[21] = 2; /* past the last event */
    hand_ok &= decode_lattice(hand, sizeof hand, 2, 1000, out) == -EINVAL;
    check(hand_ok, "lattice: a hand-written block decodes to the documented tsc; an index past "
                   "the last event is rejected");
    static const uint8_t bad_heads[][4] = {
        {1, 2, 0, 24},                   /* a period below 2 */
        {49, 1, 0, 24},                  /* one residue: that is a step */
        {49, 9, 0, 24},                  /* more than 8 */
        {49, 2, 24, 0},                  /* not ascending */
        {49, 2, 24, 24}, {49, 2, 0, 49}, /* not below the period */
    };
    int heads_refused = 1;
    for (size_t b = 0; b < sizeof bad_heads / sizeof bad_heads[0]; b++) {
        memcpy(hand, bad_heads[b], 4);
        heads_refused &= decode_lattice(hand, sizeof hand, 2, 1000, out) == -EINVAL;
    }
    check(heads_refused, "lattice: a period below 2, fewer than 2 or more than 8 residues, "
                         "residues not ascending or not below the period are rejected");
    check(at_tsc_lattice_encoding(NULL) == AT_ENC_RAW &&
              at_tsc_lattice_encoding(&(struct at_tsc_lattice){.period = 1, .count = 1}) ==
                  AT_ENC_RAW &&
              at_tsc_lattice_encoding(&(struct at_tsc_lattice){.period = 26, .count = 1}) ==
                  AT_ENC_STEPPED &&
              at_tsc_lattice_encoding(&half_ticks) == AT_ENC_LATTICE &&
              at_tsc_lattice_encoding(&(struct at_tsc_lattice){
                  .period = 49, .count = 2, .residue = {24, 0}}) == AT_ENC_RAW,
          "the encoding of each clock: none, a step, a lattice, a lattice a block cannot hold");
}

/* The clock's lattice from readings at uneven intervals (at_tsc_lattice). */
static void test_tsc_lattice(void)
{
    enum { N = 512 };
    uint64_t s[N], t = 1ull << 40;
    struct at_tsc_lattice l;
    for (int i = 0; i < N;
         i++) { /* as on a VM whose clock moves 26 at a time, 1 off now and then */
        t += 26 * (uint64_t)(1 + i % 8);
        s[i] = t + 7 + (i % 9 == 0 ? 1 : i % 11 == 0 ? (uint64_t)-1 : 0);
    }
    at_tsc_lattice(s, N, &l);
    check(l.period == 26 && l.count == 1 && l.residue[0] == (t + 7) % 26,
          "a clock moving in steps of 26, 80% of readings on them: step 26");
    uint64_t n = 12345;
    for (int i = 0; i < N; i++) { /* 24.5 ticks a point, one reading in 16 a tick over */
        n += 1 + rnd() % 13;
        s[i] = half_tick(n) + 5 + (i % 16 == 0);
    }
    at_tsc_lattice(s, N, &l);
    check(l.period == 49 && l.count == 2 && l.residue[0] == 5 && l.residue[1] == 29,
          "a clock adding 24 and 25 in turn: lattice 49 {5, 29}, not a sub-lattice of 98");
    for (int i = 0; i < N; i++) /* a clock moving by one tick */
        s[i] = t += 60 + rnd() % 40;
    at_tsc_lattice(s, N, &l);
    check(l.period == 1, "readings 60 to 99 ticks apart: none");
    for (int i = 0; i < N; i++) /* the readings share 26, but 40% are off it, spread */
        s[i] = t += i % 5 < 2 ? 26 * (uint64_t)(3 + i % 4) + 1 + (uint64_t)i % 25
                              : 26 * (uint64_t)(3 + i % 4);
    at_tsc_lattice(s, N, &l);
    check(l.period == 1, "fewer than 3 readings in 4 on the step: none");
    for (int i = 0; i < N; i++)
        s[i] = t += 300 * (uint64_t)(1 + i % 3);
    at_tsc_lattice(s, N, &l);
    check(l.period == 150 && l.count == 1,
          "a step of 300: its largest divisor below 256, 150 (a remainder takes a byte)");
    for (int i = 0; i < N; i++)
        s[i] = t;
    at_tsc_lattice(s, N, &l);
    check(l.period == 1, "a clock that does not move: none");
    at_tsc_lattice(s, 0, &l);
    check(l.period == 1, "no readings: none");
}

static void test_malformed(void)
{
    struct at_event slots[20], out[21];
    for (int i = 0; i < 20; i++)
        slots[i] = random_event();
    uint8_t buf[20 * 50 + 8];
    struct at_block_info info;
    size_t len = encode(slots, 20, buf, &info);

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
    check(at_events_decode(columns, sizeof columns, 3, 10, AT_DELTA_SAME_KIND, out, 0) == 0 &&
              out[0].actor == 2 && out[1].actor == 3 && out[2].actor == 3 && out[0].msg == 4 &&
              out[1].msg == 0 && out[2].msg == 5 && out[2].tsc == 12,
          "same-kind deltas: the second send continues from the first, past the park");
    check(at_events_decode(columns, sizeof columns, 3, 10, AT_DELTA_PREVIOUS, out, 0) == 0 &&
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
    size_t len = encode(cycle, 300, buf, &info);
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
    test_step = 26;
    test_round_trip(&stepped, "step 26");
    test_step = 255;
    test_round_trip(&stepped, "step 255");
    test_step = 64;
    test_round_trip(&stepped, "step 64");
    test_round_trip(&predicted, "predicted");
    test_bound();
    test_stepped();
    test_lattices();
    test_tsc_lattice();
    test_malformed();
    test_delta_base();
    test_predicted_patterns();
    test_predicted_edges();
    test_predicted_size();
    test_predicted_malformed();
    return failures ? 1 : 0;
}
