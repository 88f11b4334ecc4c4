/* bombtrace OUT FRAMES COUNT [meta]: writes a small trace that asks a reader for a lot of
 * memory: FRAMES EVENTS frames, each of one thread of its own and COUNT identical events (8
 * bytes each in the columns), which zstd stores in a few hundred bytes or less. With `meta`,
 * the frames are META frames of COUNT identical CLOCK records instead. Every checksum is
 * right (tests/unit/tracegen.h writes the frames), so only the reader's limits stand between
 * the file and the memory it claims. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracegen.h"

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
    uint8_t *raw = malloc(cap);
    if (!raw || cap > AT_FRAME_MAX_PAYLOAD)
        return 1;
    size_t len = meta ? clock_records(raw, count) : event_columns(raw, count);
    const struct at_block_info info = {count, 0, 1000, 1000 + count, 0};
    struct tg g;
    tg_init(&g);
    for (unsigned i = 0; i < frames; i++)
        tg_frame(&g, meta ? AT_FRAME_META : AT_FRAME_EVENTS, meta ? 0 : 1000 + i, i, count, raw,
                 len, meta ? NULL : &info);
    int err = tg_save(&g, argv[1], g.len);
    tg_free(&g);
    free(raw);
    return err == 0 ? 0 : 1;
}
