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
};

/* Sets *raw to the raw_size decoded bytes of a payload (valid until the next call). Returns 0,
 * -EINVAL (why says what is wrong), -ENOTSUP (unknown encoding) or -ENOMEM. */
int at__unpack(struct unpacker *u, const uint8_t *payload, uint32_t payload_size,
               uint32_t raw_size, uint8_t encoding, const uint8_t **raw, const char **why);

/* Decodes the EVENTS frame f of t into *events (grown as needed; *cap is its length in
 * events). Returns 0, -EINVAL / -ENOTSUP with why set, or -ENOMEM. */
int at__block_decode(struct unpacker *u, const struct trace *t, const struct frame_ref *f,
                     struct at_event **events, size_t *cap, const char **why);

void at__unpacker_free(struct unpacker *u);

#endif
