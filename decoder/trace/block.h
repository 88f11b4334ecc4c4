/* Frame payloads: stored bytes -> raw bytes (zstd or as is), and an EVENTS frame's raw bytes ->
 * events. One unpacker, with its zstd context and scratch buffer, serves every frame. */
#ifndef BLOCK_H
#define BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "at_format.h"
#include "trace.h"

struct unpacker {
    void *zstd; /* ZSTD_DCtx, created on first use */
    uint8_t *buf;
    size_t cap;
    /* the payload whose decoded bytes buf holds, so that the blocks of one frame decompress
     * it once: its address, size and crc (NULL: none) */
    const uint8_t *held;
    uint32_t held_size, held_crc;
};

/* The memory the merge may hold in decoded events, shared by the merge and its helper thread
 * (prefetch.c): taken before a block's event buffer grows, given back when one is freed. It
 * bounds what a trace can make the decoder allocate by the size of the trace: a frame holds at
 * most AT_FRAME_MAX_EVENTS events, but thousands of frames that each compress a block of
 * identical events to a few bytes would otherwise decode to gigabytes at once. */
struct budget {
    uint64_t left; /* bytes; atomic */
};

/* The budget of a merge over `bytes` of trace: a floor for traces of any size, and beyond it
 * more than the best compression of real events (about 200 decoded bytes for each byte
 * stored) ever needs. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
/* Smaller, so that the fuzzer reaches the limit with inputs it can run many times a second. */
#define AT_BUDGET_FLOOR          (1ull << 20)
#define AT_BUDGET_PER_TRACE_BYTE 32
#else
#define AT_BUDGET_FLOOR          (128ull << 20)
#define AT_BUDGET_PER_TRACE_BYTE 256
#endif

void at__budget_give(struct budget *b, uint64_t n);

/* Sets *raw to the raw_size decoded bytes of a payload (valid until the next call). Returns 0,
 * -EINVAL (why says what is wrong), -ENOTSUP (unknown encoding) or -ENOMEM. */
int at__unpack(struct unpacker *u, const uint8_t *payload, uint32_t payload_size, uint32_t raw_size,
               uint8_t encoding, const uint8_t **raw, const char **why);

/* Decodes the EVENTS frame f of t into *events (grown as needed, within budget b leaving keep
 * bytes; *cap is its length in events). Returns 0, -EINVAL / -ENOTSUP with why set, -E2BIG
 * with why set when the budget does not allow the block, or -ENOMEM. */
int at__block_decode(struct unpacker *u, const struct trace *t, const struct frame_ref *f,
                     struct at_event **events, size_t *cap, struct budget *b, uint64_t keep,
                     const char **why);

void at__unpacker_free(struct unpacker *u);

#endif
