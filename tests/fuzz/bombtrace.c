/* bombtrace OUT FRAMES COUNT [meta]: writes a small trace that asks a reader for a lot of
 * memory: FRAMES EVENTS frames, each of one thread of its own and COUNT identical events (8
 * bytes each in the columns), which zstd stores in a few hundred bytes or less. With `meta`, the frames are META frames of COUNT identical CLOCK records instead.
 * Every checksum is right, so only the reader's limits stand between the file and the memory
 * it claims. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "at_codec.h"
#include "at_format.h"

/* COUNT events of kind send, one tick apart, every other column zero: a valid EVENTS payload
 * (columns kind, path, core, tsc delta, actor, peer, msg, name, one byte each). Every frame
 * spans the same ticks, so a merge needs them all decoded at once. */
static size_t event_columns(uint8_t *raw, uint32_t count)
{
    memset(raw, 0, (size_t)count * 8);
    memset(raw, 3, count);
    memset(raw + (size_t)count * 3, 2, count); /* zigzag(+1) */
    return (size_t)count * 8;
}

/* COUNT CLOCK records (type, body length 3, tsc 0, mono_ns 0, real_ns 0). */
static size_t clock_records(uint8_t *raw, uint32_t count)
{
    static const uint8_t record[] = {AT_META_CLOCK, 3, 0, 0, 0};
    for (uint32_t i = 0; i < count; i++)
        memcpy(raw + (size_t)i * sizeof record, record, sizeof record);
    return (size_t)count * sizeof record;
}

static int write_frame(FILE *out, struct at_frame_header *h, const uint8_t *raw, size_t len,
                       uint8_t *packed, size_t packed_cap)
{
    size_t n = ZSTD_compress(packed, packed_cap, raw, len, 3);
    if (ZSTD_isError(n))
        return -1;
    h->magic = AT_FRAME_MAGIC;
    h->encoding = AT_ENC_ZSTD;
    h->header_size = AT_FRAME_HEADER_SIZE;
    h->payload_size = (uint32_t)n;
    h->raw_size = (uint32_t)len;
    h->payload_crc = at_crc32c(0, packed, n);
    h->header_crc = at_crc32c(0, h, offsetof(struct at_frame_header, header_crc));
    return fwrite(h, sizeof *h, 1, out) == 1 && fwrite(packed, 1, n, out) == n ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fputs("usage: bombtrace OUT FRAMES COUNT [meta]\n", stderr);
        return 2;
    }
    unsigned frames = (unsigned)atoi(argv[2]);
    uint32_t count = (uint32_t)strtoul(argv[3], NULL, 10);
    int meta = argc > 4 && strcmp(argv[4], "meta") == 0;
    size_t cap = (size_t)count * (meta ? 5 : 8);
    uint8_t *raw = malloc(cap), *packed = malloc(ZSTD_compressBound(cap));
    FILE *out = fopen(argv[1], "wb");
    if (!raw || !packed || !out || cap > AT_FRAME_MAX_PAYLOAD)
        return 1;
    size_t len = meta ? clock_records(raw, count) : event_columns(raw, count);
    struct at_file_header fh = {.version_major = AT_FORMAT_MAJOR,
                                .version_minor = AT_FORMAT_MINOR, .header_size = sizeof fh};
    memcpy(fh.magic, AT_FILE_MAGIC, AT_FILE_MAGIC_LEN);
    int err = fwrite(&fh, sizeof fh, 1, out) == 1 ? 0 : -1;
    for (unsigned i = 0; i < frames && err == 0; i++) {
        struct at_frame_header h = {.type = meta ? AT_FRAME_META : AT_FRAME_EVENTS,
                                    .tid = meta ? 0 : 1000 + i, .seq = i, .count = count,
                                    .first_tsc = meta ? 0 : 1000,
                                    .last_tsc = meta ? 0 : 1000 + count};
        err = write_frame(out, &h, raw, len, packed, ZSTD_compressBound(cap));
    }
    if (fclose(out) != 0)
        err = -1;
    free(raw);
    free(packed);
    return err == 0 ? 0 : 1;
}
