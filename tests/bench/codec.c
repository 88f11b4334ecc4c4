/* The writer's own work on a trace's events, apart from the program: each EVENTS frame of a
 * trace (format 2) is decoded, then encoded again as the writer encodes it (at_events_encode,
 * block after block) and compressed as the writer compresses it (at_events_compression, at the
 * zstd level given, 1 by default), each timed in this thread's CPU time, the best of REPEATS
 * per frame. The events are warm in this core's cache, where the writer reads them as other
 * cores left them: the figures are the least the writer can cost per event with this format
 * and codec.
 *
 *   codec TRACE [LEVEL]
 *
 * prints "encode E ns/event, zstd Z ns/event, together T; B bytes/event compressed" and the
 * events and frames measured. */
#include <errno.h>
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
};

/* Decodes the EVENTS frame at h into fe; returns its events. */
static uint64_t decode_frame(const char *path, const struct at_frame_header *h, uint8_t *raw,
                             struct frame_events *fe)
{
    const uint8_t *payload = (const uint8_t *)h + h->header_size;
    if (h->encoding == AT_ENC_ZSTD) {
        size_t n = ZSTD_decompress(raw, h->raw_size, payload, h->payload_size);
        if (ZSTD_isError(n) || n != h->raw_size)
            die(path, "a frame does not decompress");
    } else {
        memcpy(raw, payload, h->raw_size);
    }
    struct at_frame_block one = {h->seq, h->count, h->torn, h->raw_size, h->first_tsc,
                                 h->last_tsc};
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
    for (unsigned b = 0; b < fe->blocks; b++) {
        if (at_events_decode(columns, entry[b].raw_size, entry[b].count, entry[b].first_tsc,
                             AT_DELTA_SAME_KIND, out) < 0)
            die(path, "a block does not decode");
        fe->count[b] = entry[b].count;
        columns += entry[b].raw_size;
        out += entry[b].count;
    }
    return h->count;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: codec TRACE [ZSTD_LEVEL]\n");
        return 2;
    }
    const char *path = argv[1];
    int level = argc == 3 ? atoi(argv[2]) : 1;
    size_t len;
    uint8_t *data = load(path, &len);
    const struct at_file_header *fh = (const void *)data;
    if (len < sizeof *fh || memcmp(fh->magic, AT_FILE_MAGIC, AT_FILE_MAGIC_LEN) != 0 ||
        fh->version_major != 2)
        die(path, "not an actortrace trace of format 2");

    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (cctx && at_events_compression(cctx, level) < 0)
        die(path, "zstd refuses that level");
    size_t raw_cap = at_events_encode_bound(AT_FRAME_MAX_EVENTS);
    size_t packed_cap = ZSTD_compressBound(raw_cap);
    uint8_t *raw = malloc(raw_cap), *encoded = malloc(raw_cap), *packed = malloc(packed_cap);
    struct frame_events fe = {.events = calloc(AT_FRAME_MAX_EVENTS, sizeof(struct at_event))};
    if (!cctx || !raw || !encoded || !packed || !fe.events)
        die(path, "out of memory");

    double encode_ns = 0, zstd_ns = 0;
    uint64_t events = 0, bytes = 0;
    unsigned frames = 0;
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
        events += decode_frame(path, h, raw, &fe);
        frames++;
        double best_encode = 1e300, best_zstd = 1e300;
        size_t packed_len = 0;
        for (int r = 0; r < REPEATS; r++) {
            double t0 = thread_ns();
            size_t n = 0;
            const struct at_event *slots = fe.events;
            for (unsigned b = 0; b < fe.blocks; b++) {
                struct at_block_info info;
                n += at_events_encode(slots, fe.count[b], encoded + n, &info);
                slots += fe.count[b];
            }
            double t1 = thread_ns();
            packed_len = ZSTD_compress2(cctx, packed, packed_cap, encoded, n);
            double t2 = thread_ns();
            if (ZSTD_isError(packed_len))
                die(path, ZSTD_getErrorName(packed_len));
            best_encode = t1 - t0 < best_encode ? t1 - t0 : best_encode;
            best_zstd = t2 - t1 < best_zstd ? t2 - t1 : best_zstd;
        }
        encode_ns += best_encode;
        zstd_ns += best_zstd;
        bytes += packed_len + h->header_size;
    }
    if (events == 0)
        die(path, "no events");
    printf("encode %.2f ns/event, zstd %.2f ns/event, together %.2f; %.2f bytes/event "
           "compressed (%llu events in %u frames, zstd level %d)\n",
           encode_ns / (double)events, zstd_ns / (double)events,
           (encode_ns + zstd_ns) / (double)events, (double)bytes / (double)events,
           (unsigned long long)events, frames, level);
    return 0;
}
