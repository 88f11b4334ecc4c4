/* The writer's own work on a trace's events, apart from the program: each EVENTS frame of a
 * trace (format 2, in any encoding) is decoded, then encoded again as the writer encodes it
 * (at_events_encode, block after block, with the clock step or lattice the frame was written
 * with, if any, or the one given) and compressed as the writer compresses it
 * (at_events_compression, at the zstd level given, 1 by default), each timed in this thread's
 * CPU time, the best of REPEATS per frame. The events are warm in this core's cache, where the
 * writer reads them as other cores left them: the figures are the least the writer can cost
 * per event with this format and codec.
 *
 *   codec TRACE [LEVEL]   prints "encode E ns/event, zstd Z ns/event, together T; B
 *                         bytes/event compressed" and the events and frames measured
 *   codec TRACE predicted the same for the predicted encoding (ACTORTRACE_ENCODING=predicted)
 *                         and its entropy stage, with the bytes per event stored without it;
 *                         each frame's events are checked to decode as they were
 *   codec TRACE clock=C   the same as with level 1, every frame encoded with the clock C
 *                         instead of its own: "1" none, "26" a step of 26 ticks, "49:0,24" a
 *                         lattice of period 49 and residues 0 and 24
 *   codec TRACE first     the same as with level 1, each frame timed on its first pass only,
 *                         as the writer meets it: the earlier passes of the best of REPEATS
 *                         leave zstd's workspace in the cache
 *   codec TRACE encodings how many EVENTS frames the trace holds in each encoding */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "at_codec.h"
#include "at_format.h"

#define REPEATS 3

static double thread_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void die(const char *path, const char *why)
{
    fprintf(stderr, "codec: %s: %s\n", path, why);
    exit(1);
}

static uint8_t *load(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    if (size < 0 || !data || fread(data, 1, (size_t)size, f) != (size_t)size)
        die(path, "cannot read it");
    fclose(f);
    *len = (size_t)size;
    return data;
}

/* One frame's blocks, decoded: what the writer had in the ring. */
struct frame_events {
    struct at_event *events;
    uint32_t count[AT_FRAME_MAX_BLOCKS];
    unsigned blocks;
    struct at_tsc_lattice clock; /* the clock step or lattice the frame was encoded with */
};

/* Decodes the EVENTS frame at h into fe; returns its events. */
static uint64_t decode_frame(const char *path, const struct at_frame_header *h, uint8_t *raw,
                             struct frame_events *fe)
{
    const uint8_t *payload = (const uint8_t *)h + h->header_size;
    if (h->encoding == AT_ENC_ZSTD || h->encoding == AT_ENC_PREDICTED_ZSTD ||
        h->encoding == AT_ENC_STEPPED_ZSTD || h->encoding == AT_ENC_LATTICE_ZSTD) {
        size_t n = ZSTD_decompress(raw, h->raw_size, payload, h->payload_size);
        if (ZSTD_isError(n) || n != h->raw_size)
            die(path, "a frame does not decompress");
    } else {
        memcpy(raw, payload, h->raw_size);
    }
    struct at_frame_block one = {h->seq, h->count, h->torn, h->raw_size, h->first_tsc, h->last_tsc};
    const struct at_frame_block *entry = &one;
    fe->blocks = 1;
    if (h->type == AT_FRAME_EVENTS_BLOCKS) {
        const struct at_frame_blocks *table = (const void *)(h + 1);
        if (table->count > AT_FRAME_MAX_BLOCKS)
            die(path, "a frame's block table is too long");
        fe->blocks = table->count;
        entry = (const void *)(table + 1);
    }
    const uint8_t *columns = raw;
    struct at_event *out = fe->events;
    enum at_frame_encoding clock = AT_ENC_RAW;
    fe->clock = (struct at_tsc_lattice){.period = 1, .count = 1};
    if (h->encoding == AT_ENC_STEPPED || h->encoding == AT_ENC_STEPPED_ZSTD) {
        clock = AT_ENC_STEPPED;
        fe->clock.period = h->raw_size > 0 ? raw[0] : 1;
    } else if (h->encoding == AT_ENC_LATTICE || h->encoding == AT_ENC_LATTICE_ZSTD) {
        clock = AT_ENC_LATTICE;
        if (h->raw_size < 2 || raw[1] > AT_LATTICE_MAX || h->raw_size < 2u + raw[1])
            die(path, "a block's lattice is cut short");
        fe->clock = (struct at_tsc_lattice){.period = raw[0], .count = raw[1]};
        memcpy(fe->clock.residue, raw + 2, raw[1]);
    }
    for (unsigned b = 0; b < fe->blocks; b++) {
        int err = h->encoding == AT_ENC_PREDICTED || h->encoding == AT_ENC_PREDICTED_ZSTD
                      ? at_events_unpredict(columns, entry[b].raw_size, entry[b].count, out)
                      : at_events_decode(columns, entry[b].raw_size, entry[b].count,
                                         entry[b].first_tsc, AT_DELTA_SAME_KIND, out, clock);
        if (err < 0)
            die(path, "a block does not decode");
        fe->count[b] = entry[b].count;
        columns += entry[b].raw_size;
        out += entry[b].count;
    }
    return h->count;
}

/* What one way of encoding does to a frame's events: encode, then compress or entropy-code. */
struct way {
    bool predicted;   /* at_events_predict and at_events_entropy, else columns and zstd */
    bool clock_given; /* every frame encoded with `clock`, not with the frame's own */
    bool first_pass;  /* each frame timed once, not the best of REPEATS */
    struct at_tsc_lattice clock;
    ZSTD_CCtx *cctx;
    uint8_t *encoded, *packed, *check;
    size_t packed_cap;
};

struct totals {
    double encode_ns, pack_ns;
    uint64_t events, bytes, stored; /* stored: bytes had the encoded payload been stored raw */
    uint64_t off;                   /* events off the clock's step or lattice */
    unsigned frames;
};

/* The clock a frame's events are encoded with. */
static const struct at_tsc_lattice *clock_of(const struct way *w, const struct frame_events *fe)
{
    return w->clock_given ? &w->clock : &fe->clock;
}

/* Encodes fe's blocks into w->encoded; returns the length, and in *off the events off the
 * clock's step or lattice. */
static size_t encode(const struct way *w, const struct frame_events *fe, uint64_t *off)
{
    size_t n = 0;
    const struct at_event *slots = fe->events;
    for (unsigned b = 0; b < fe->blocks; b++) {
        struct at_block_info info;
        n += w->predicted
                 ? at_events_predict(slots, fe->count[b], w->encoded + n, &info)
                 : at_events_encode(slots, fe->count[b], w->encoded + n, &info, clock_of(w, fe));
        *off += info.off_step;
        slots += fe->count[b];
    }
    return n;
}

static size_t pack(const struct way *w, size_t n)
{
    if (w->predicted)
        return at_events_entropy(w->cctx, w->packed, w->packed_cap, w->encoded, n);
    size_t packed = ZSTD_compress2(w->cctx, w->packed, w->packed_cap, w->encoded, n);
    return ZSTD_isError(packed) ? 0 : packed;
}

/* The encoding of fe decodes to fe's events again. */
static int round_trips(const struct way *w, const struct frame_events *fe)
{
    const struct at_event *slots = fe->events;
    struct at_event *back = (struct at_event *)(void *)w->check;
    for (unsigned b = 0; b < fe->blocks; b++) {
        struct at_block_info info;
        int err;
        if (w->predicted) {
            size_t n = at_events_predict(slots, fe->count[b], w->packed, &info);
            err = at_events_unpredict(w->packed, n, fe->count[b], back);
        } else {
            size_t n = at_events_encode(slots, fe->count[b], w->packed, &info, clock_of(w, fe));
            err = at_events_decode(w->packed, n, fe->count[b], info.first_tsc, AT_DELTA_SAME_KIND,
                                   back, at_tsc_lattice_encoding(clock_of(w, fe)));
        }
        if (err < 0 || memcmp(back, slots, fe->count[b] * sizeof *back) != 0)
            return 0;
        slots += fe->count[b];
    }
    return 1;
}

/* Encodes and packs fe REPEATS times, adding the best times and the sizes to t. */
static void measure(const char *path, const struct way *w, const struct frame_events *fe,
                    size_t header_size, struct totals *t)
{
    double best_encode = 1e300, best_pack = 1e300;
    size_t n = 0, packed = 0;
    for (int r = 0; r < (w->first_pass ? 1 : REPEATS); r++) {
        double t0 = thread_ns();
        uint64_t off = 0;
        n = encode(w, fe, &off);
        if (r == 0)
            t->off += off;
        double t1 = thread_ns();
        packed = pack(w, n);
        double t2 = thread_ns();
        if (packed == 0)
            die(path, "the payload does not compress");
        best_encode = t1 - t0 < best_encode ? t1 - t0 : best_encode;
        best_pack = t2 - t1 < best_pack ? t2 - t1 : best_pack;
    }
    if (!round_trips(w, fe))
        die(path, "the encoding does not decode to the same events");
    t->encode_ns += best_encode;
    t->pack_ns += best_pack;
    t->bytes += (packed < n ? packed : n) + header_size;
    t->stored += n + header_size;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr,
                "usage: codec TRACE [ZSTD_LEVEL | predicted | first | encodings | clock=C]\n");
        return 2;
    }
    const char *path = argv[1];
    struct way w = {.predicted = argc == 3 && strcmp(argv[2], "predicted") == 0,
                    .first_pass = argc == 3 && strcmp(argv[2], "first") == 0};
    int level = argc == 3 && !w.predicted && !w.first_pass ? atoi(argv[2]) : 1;
    if (argc == 3 && strncmp(argv[2], "clock=", 6) == 0) {
        char *end;
        w.clock_given = true, level = 1;
        w.clock =
            (struct at_tsc_lattice){.period = (uint32_t)strtoul(argv[2] + 6, &end, 10), .count = 1};
        if (*end == ':')
            for (w.clock.count = 0; w.clock.count < AT_LATTICE_MAX && (*end == ':' || *end == ',');)
                w.clock.residue[w.clock.count++] = (uint8_t)strtoul(end + 1, &end, 10);
        if (*end != '\0' || (w.clock.count > 1 && at_tsc_lattice_encoding(&w.clock) == AT_ENC_RAW))
            die(argv[2], "not a clock: 1, a step, or a period and 2 to 8 ascending residues");
    }
    size_t len;
    uint8_t *data = load(path, &len);
    const struct at_file_header *fh = (const void *)data;
    if (len < sizeof *fh || memcmp(fh->magic, AT_FILE_MAGIC, AT_FILE_MAGIC_LEN) != 0 ||
        fh->version_major != 2)
        die(path, "not an actortrace trace of format 2");

    w.cctx = ZSTD_createCCtx();
    if (w.cctx &&
        (w.predicted ? at_events_entropy_init(w.cctx) : at_events_compression(w.cctx, level)) < 0)
        die(path, "zstd refuses that level");
    size_t raw_cap = at_events_encode_bound(AT_FRAME_MAX_EVENTS);
    w.packed_cap = ZSTD_compressBound(raw_cap);
    uint8_t *raw = malloc(raw_cap);
    w.encoded = malloc(raw_cap);
    w.packed = malloc(w.packed_cap);
    w.check = calloc(AT_FRAME_MAX_EVENTS, sizeof(struct at_event));
    struct frame_events fe = {.events = calloc(AT_FRAME_MAX_EVENTS, sizeof(struct at_event))};
    if (!w.cctx || !raw || !w.encoded || !w.packed || !w.check || !fe.events)
        die(path, "out of memory");

    struct totals t = {0};
    int encodings = argc == 3 && strcmp(argv[2], "encodings") == 0;
    unsigned by_encoding[256] = {0};
    for (size_t off = fh->header_size; off + AT_FRAME_HEADER_SIZE <= len;) {
        const struct at_frame_header *h = (const void *)(data + off);
        if (h->magic != AT_FRAME_MAGIC || off + h->header_size + h->payload_size > len ||
            h->raw_size > raw_cap)
            die(path, "damaged (run tracedecode on it)");
        off += h->header_size + h->payload_size;
        if (h->type != AT_FRAME_EVENTS && h->type != AT_FRAME_EVENTS_BLOCKS)
            continue;
        if (h->count > AT_FRAME_MAX_EVENTS)
            die(path, "a frame holds too many events");
        by_encoding[h->encoding]++;
        if (encodings)
            continue;
        t.events += decode_frame(path, h, raw, &fe);
        t.frames++;
        measure(path, &w, &fe, h->header_size, &t);
    }
    if (encodings) {
        printf("EVENTS frames: %u columns, %u columns+zstd, %u predicted, %u predicted+huffman, "
               "%u columns with a clock step, %u the same+zstd, %u columns with a clock lattice, "
               "%u the same+zstd\n",
               by_encoding[AT_ENC_RAW], by_encoding[AT_ENC_ZSTD], by_encoding[AT_ENC_PREDICTED],
               by_encoding[AT_ENC_PREDICTED_ZSTD], by_encoding[AT_ENC_STEPPED],
               by_encoding[AT_ENC_STEPPED_ZSTD], by_encoding[AT_ENC_LATTICE],
               by_encoding[AT_ENC_LATTICE_ZSTD]);
        return 0;
    }
    if (t.events == 0)
        die(path, "no events");
    double e = (double)t.events;
    if (w.predicted)
        printf("encode %.2f ns/event, huffman %.2f ns/event, together %.2f; %.2f bytes/event "
               "huffman-coded, %.2f stored as encoded (%llu events in %u frames, predicted)\n",
               t.encode_ns / e, t.pack_ns / e, (t.encode_ns + t.pack_ns) / e, t.bytes / e,
               t.stored / e, (unsigned long long)t.events, t.frames);
    else
        printf("encode %.2f ns/event, zstd %.2f ns/event, together %.2f; %.2f bytes/event "
               "compressed (%llu events in %u frames, zstd level %d, %s, %.2f%% off the "
               "clock step or lattice)\n",
               t.encode_ns / e, t.pack_ns / e, (t.encode_ns + t.pack_ns) / e, t.bytes / e,
               (unsigned long long)t.events, t.frames, level,
               w.first_pass ? "first passes" : "best of 3", 100 * t.off / e);
    return 0;
}
