/* Frame payloads: the stored bytes made raw (zstd or as they are), and an EVENTS payload
 * decoded into events (FORMAT.md section 4, with at_events_decode doing the columns). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "array.h"
#include "at_codec.h"
#include "block.h"

/* The fewest bytes one event takes: in the columns, kind, path and six one-byte varints; in the
 * predicted encoding, its first byte and a tsc byte. Checked before the event array is sized,
 * so a header cannot make us allocate for events that the payload could never hold. */
#define EVENT_MIN_BYTES           8
#define PREDICTED_EVENT_MIN_BYTES 2

static int is_zstd(uint8_t encoding)
{
    return encoding == AT_ENC_ZSTD || encoding == AT_ENC_PREDICTED_ZSTD ||
           encoding == AT_ENC_STEPPED_ZSTD || encoding == AT_ENC_LATTICE_ZSTD;
}

static int grow_buffer(struct unpacker *u, size_t need)
{
    return need <= u->cap ? 0 : at__array_grow((void **)&u->buf, &u->cap, need - 1, 1, 64 << 10);
}

static int unzstd(struct unpacker *u, const uint8_t *payload, uint32_t payload_size,
                  uint32_t raw_size, const char **why)
{
    if (!u->zstd && !(u->zstd = ZSTD_createDCtx()))
        return -ENOMEM;
    if (grow_buffer(u, raw_size) < 0)
        return -ENOMEM;
    size_t got = ZSTD_decompressDCtx(u->zstd, u->buf, raw_size, payload, payload_size);
    if (ZSTD_isError(got)) {
        *why = "the zstd payload does not decompress";
        return -EINVAL;
    }
    if (got != raw_size) {
        *why = "the payload decompresses to a size other than raw_size";
        return -EINVAL;
    }
    return 0;
}

int at__unpack(struct unpacker *u, const uint8_t *payload, uint32_t payload_size, uint32_t raw_size,
               uint8_t encoding, const uint8_t **raw, const char **why)
{
    u->held = NULL; /* buf is about to change */
    if (encoding == AT_ENC_RAW || encoding == AT_ENC_PREDICTED || encoding == AT_ENC_STEPPED ||
        encoding == AT_ENC_LATTICE) {
        if (payload_size != raw_size) {
            *why = "a raw payload whose size is not raw_size";
            return -EINVAL;
        }
        *raw = payload;
        return 0;
    }
    if (!is_zstd(encoding)) {
        *why = "unknown payload encoding";
        return -ENOTSUP;
    }
    int err = unzstd(u, payload, payload_size, raw_size, why);
    *raw = u->buf ? u->buf : (const uint8_t *)""; /* raw_size 0 allocates nothing */
    return err;
}

/* Takes n bytes when at least keep bytes would be left after; returns 1, or 0 (nothing
 * taken). */
static int budget_take(struct budget *b, uint64_t n, uint64_t keep)
{
    uint64_t left = __atomic_load_n(&b->left, __ATOMIC_RELAXED);
    do {
        if (left < n || left - n < keep)
            return 0;
    } while (!__atomic_compare_exchange_n(&b->left, &left, left - n, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return 1;
}

void at__budget_give(struct budget *b, uint64_t n)
{
    __atomic_fetch_add(&b->left, n, __ATOMIC_RELAXED);
}

/* The decoded payload of f's frame, decompressed again only when the last payload unpacked
 * was another (the blocks of a frame are decoded one after the other). */
static int unpack_frame(struct unpacker *u, const struct trace *t, const struct frame_ref *f,
                        const uint8_t **raw, const char **why)
{
    const uint8_t *base = f->recovered ? t->recovered : t->data;
    const uint8_t *payload = base + f->offset + f->header_size;
    uint32_t crc = 0;
    if (!f->recovered)
        memcpy(&crc, base + f->offset + offsetof(struct at_frame_header, payload_crc), 4);
    if (is_zstd(f->encoding) && u->held == payload && u->held_size == f->payload_size &&
        u->held_crc == crc) {
        *raw = u->buf;
        return 0;
    }
    int err = at__unpack(u, payload, f->payload_size, f->raw_size, f->encoding, raw, why);
    if (err == 0 && is_zstd(f->encoding))
        *u = (struct unpacker){u->zstd, u->buf, u->cap, payload, f->payload_size, crc};
    return err;
}

int at__block_decode(struct unpacker *u, const struct trace *t, const struct frame_ref *f,
                     struct at_event **events, size_t *cap, struct budget *b, uint64_t keep,
                     const char **why)
{
    int predicted = f->encoding == AT_ENC_PREDICTED || f->encoding == AT_ENC_PREDICTED_ZSTD;
    /* how the columns hold the timestamps: the encoding stored as it is */
    enum at_frame_encoding clock = f->encoding == AT_ENC_STEPPED_ZSTD   ? AT_ENC_STEPPED
                                   : f->encoding == AT_ENC_LATTICE_ZSTD ? AT_ENC_LATTICE
                                   : f->encoding == AT_ENC_ZSTD         ? AT_ENC_RAW
                                                                        : f->encoding;
    if ((uint64_t)f->count * (predicted ? PREDICTED_EVENT_MIN_BYTES : EVENT_MIN_BYTES) >
        f->part_size) {
        *why = "more events than raw_size can hold";
        return -EINVAL;
    }
    const uint8_t *raw;
    int err = unpack_frame(u, t, f, &raw, why);
    if (err < 0)
        return err;
    if (f->count > *cap) {
        uint64_t more = (f->count - *cap) * sizeof **events;
        if (!budget_take(b, more, keep)) {
            *why = "its events would pass the decoder's memory budget (128 MiB, and 256 bytes "
                   "for each byte of trace)";
            return -E2BIG;
        }
        struct at_event *grown = realloc(*events, f->count * sizeof *grown);
        if (!grown) {
            at__budget_give(b, more);
            return -ENOMEM;
        }
        *events = grown;
        *cap = f->count;
    }
    /* format 1 took deltas against the previous event; recovered blocks are encoded here */
    enum at_delta_base delta_base =
        t->version_major == 1 && !f->recovered ? AT_DELTA_PREVIOUS : AT_DELTA_SAME_KIND;
    const uint8_t *part = raw + f->part_offset;
    if ((predicted ? at_events_unpredict(part, f->part_size, f->count, *events)
                   : at_events_decode(part, f->part_size, f->count, f->first_tsc, delta_base,
                                      *events, clock)) < 0) {
        *why = "malformed event columns";
        return -EINVAL;
    }
    return 0;
}

void at__unpacker_free(struct unpacker *u)
{
    ZSTD_freeDCtx(u->zstd);
    free(u->buf);
    *u = (struct unpacker){0};
}
