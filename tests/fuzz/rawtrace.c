/* rawtrace IN OUT: writes the trace IN again with every frame's payload stored raw (zstd
 * payloads decompressed, predicted ones without their entropy stage, checksums recomputed). A
 * fuzzing seed: the fuzzer's byte mutations then land in event columns (with a clock step, a
 * lattice or neither), predicted events and metadata records, where in compressed bytes they would
 * only make zstd fail. IN must be a whole, undamaged trace. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "at_codec.h"
#include "at_format.h"

static int fail(const char *path, const char *why)
{
    fprintf(stderr, "rawtrace: %s: %s\n", path, why);
    return 1;
}

static uint8_t *read_all(FILE *f, size_t *size)
{
    size_t cap = 1 << 16;
    uint8_t *buf = malloc(cap);
    *size = 0;
    for (size_t got; buf && (got = fread(buf + *size, 1, cap - *size, f)) > 0;) {
        *size += got;
        if (*size == cap) {
            uint8_t *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    return buf;
}

/* Writes the frame at data[pos] raw; returns the offset of the next frame, or 0 on error. */
static size_t copy_frame(const uint8_t *data, size_t size, size_t pos, FILE *out)
{
    struct at_frame_header h;
    if (size - pos < sizeof h)
        return 0;
    memcpy(&h, data + pos, sizeof h);
    const uint8_t *payload = data + pos + h.header_size;
    size_t next = pos + h.header_size + (size_t)h.payload_size;
    /* each encoding stored as it is has an even number, and the next one is it packed */
    int stored = h.encoding % 2 == 0;
    if (h.magic != AT_FRAME_MAGIC || h.header_size < sizeof h || next > size ||
        (stored && h.payload_size != h.raw_size))
        return 0;
    uint8_t *raw = malloc(h.raw_size ? h.raw_size : 1);
    if (!raw)
        return 0;
    if (stored)
        memcpy(raw, payload, h.raw_size);
    else if (ZSTD_decompress(raw, h.raw_size, payload, h.payload_size) != h.raw_size)
        next = 0;
    h.encoding &= (uint8_t)~1u;
    h.payload_size = h.raw_size;
    h.payload_crc = at_crc32c(0, raw, h.raw_size);
    h.header_crc = at_crc32c(0, &h, offsetof(struct at_frame_header, header_crc));
    size_t rest = h.header_size - sizeof h; /* a block table, kept as it is */
    if (next &&
        (fwrite(&h, sizeof h, 1, out) != 1 || fwrite(data + pos + sizeof h, 1, rest, out) != rest ||
         fwrite(raw, 1, h.raw_size, out) != h.raw_size))
        next = 0;
    free(raw);
    return next;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: rawtrace IN OUT\n", stderr);
        return 2;
    }
    FILE *in = fopen(argv[1], "rb");
    size_t size = 0;
    uint8_t *data = in ? read_all(in, &size) : NULL;
    if (in)
        fclose(in);
    struct at_file_header fh;
    if (!data || size < sizeof fh)
        return fail(argv[1], "cannot read a trace");
    memcpy(&fh, data, sizeof fh);
    FILE *out = fopen(argv[2], "wb");
    if (!out || fh.header_size > size || fwrite(data, 1, fh.header_size, out) != fh.header_size)
        return fail(argv[2], "cannot write");
    for (size_t pos = fh.header_size; pos < size;)
        if (!(pos = copy_frame(data, size, pos, out)))
            return fail(argv[1], "not a whole, undamaged trace");
    free(data);
    return fclose(out) == 0 ? 0 : fail(argv[2], "cannot write");
}
