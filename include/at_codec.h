/* Encoding shared by the recorder and the decoder: varints, crc32c, and the columnar event
 * block of an EVENTS frame (docs/FORMAT.md, "Event payload"). Implemented in common/. */
#ifndef AT_CODEC_H
#define AT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "at_format.h"

#define AT_VARINT_MAX 10

/* Writes v as a LEB128 varint (7 bits a byte, low first); returns the bytes written (1-10). */
static inline size_t at_varint_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

/* Reads a varint at *in, not past end; advances *in. Returns 0, or -1 when it runs past end or
 * is longer than 10 bytes. */
static inline int at_varint_get(const uint8_t **in, const uint8_t *end, uint64_t *v)
{
    const uint8_t *p = *in;
    uint64_t value = 0;
    for (unsigned shift = 0; shift < 70 && p < end; shift += 7) {
        uint8_t byte = *p++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (byte < 0x80) {
            *in = p;
            *v = value;
            return 0;
        }
    }
    return -1;
}

static inline uint64_t at_zigzag(uint64_t delta)
{
    return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static inline uint64_t at_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* crc32c (Castagnoli); pass 0 as crc for a new checksum. */
uint32_t at_crc32c(uint32_t crc, const void *data, size_t len);

struct at_block_info {
    uint32_t count;               /* committed events encoded */
    uint32_t torn;                /* slots skipped because their kind was 0 */
    uint64_t first_tsc, last_tsc; /* smallest and largest tsc of the encoded events */
    uint32_t off_step;            /* with a clock step or lattice, events listed off it (FORMAT.md
                                   * 4.3, 4.4) */
};

/* The most bytes at_events_encode can write for n slots. */
size_t at_events_encode_bound(uint32_t n);

/* The values a clock returns (FORMAT.md 4.3 and 4.4): `period` ticks apart, in `count`
 * classes, one for each residue mod period. count 1 is a step (the deltas are its multiples,
 * whatever their residue); period 0 or 1: none, a clock that moves by one tick. */
#define AT_LATTICE_MAX 8
struct at_tsc_lattice {
    uint32_t period;                 /* 2 to 255; 0 or 1: none */
    uint32_t count;                  /* 1 (a step) to AT_LATTICE_MAX */
    uint8_t residue[AT_LATTICE_MAX]; /* count of them, ascending, below period */
};

/* Encodes the committed slots (kind != 0) of slots[0..n) as the columns of an EVENTS payload,
 * its deltas AT_DELTA_SAME_KIND, into out, which holds at least at_events_encode_bound(n) bytes.
 * Each slot's last word is read with acquire, so slots still being written by their thread are
 * either whole or skipped. The timestamps: with a step (clock->count 1, period 2 to 255), the
 * tsc deltas in units of it with their remainders (FORMAT.md 4.3, encodings 4 and 5); with a
 * lattice (2 to AT_LATTICE_MAX residues), each tsc as its lattice index, the indices' deltas, and
 * the remainders (4.4, encodings 6 and 7); else (clock NULL or period below 2) as they are
 * (4.1, encodings 0 and 1). at_tsc_lattice_encoding says which: AT_ENC_RAW, AT_ENC_STEPPED or
 * AT_ENC_LATTICE. Returns the bytes written; fills info. */
size_t at_events_encode(const struct at_event *slots, uint32_t n, uint8_t *out,
                        struct at_block_info *info, const struct at_tsc_lattice *clock);
enum at_frame_encoding at_tsc_lattice_encoding(const struct at_tsc_lattice *clock);

/* The lattice of a clock, from samples[0..n) of rdtsc read at uneven intervals (FORMAT.md 4.4):
 * for each period 2 to 255, the residues mod it that hold a quarter as many samples as the most
 * frequent one or more, kept when they hold three samples in four, number at most
 * AT_LATTICE_MAX, lie evenly (each gap to the next is period / count rounded down or up) and
 * give at least 2 ticks a point; of those, the one with the most ticks a point, the shortest
 * period of equals. A clock that moves in steps of 26 ticks gives period 26, count 1; one that
 * adds 24 and 25 ticks in turn period 49 and two residues; one that moves by a tick, whose
 * readings fall anywhere, or that moved between fewer than half of them, period 1 (none). */
void at_tsc_lattice(const uint64_t *samples, size_t n, struct at_tsc_lattice *out);

/* Sets cctx (a ZSTD_CCtx) to compress EVENTS payloads at zstd level `level` as the writer
 * does, for every frame it compresses. 0, or -EINVAL for a level zstd refuses. */
struct ZSTD_CCtx_s;
int at_events_compression(struct ZSTD_CCtx_s *cctx, int level);

/* What the actor, peer and msg deltas of an EVENTS payload are taken against (FORMAT.md,
 * "Event payload"): the previous event of the same kind in the block, as at_events_encode
 * writes them and format 2 says; or the previous event, as format 1 said. */
enum at_delta_base {
    AT_DELTA_SAME_KIND,
    AT_DELTA_PREVIOUS,
};

/* Decodes `count` events from the columns in[0..len) into out[0..count); `clock` says how the
 * timestamps are: AT_ENC_RAW (encodings 0 and 1), AT_ENC_STEPPED (4 and 5) or AT_ENC_LATTICE
 * (6 and 7). first_tsc is the frame header's. Returns 0, or -EINVAL when the columns are
 * malformed: a varint runs past the end, bytes remain after the last column, a kind is 0, or a
 * step, a lattice or a remainder is out of range. */
int at_events_decode(const uint8_t *in, size_t len, uint32_t count, uint64_t first_tsc,
                     enum at_delta_base base, struct at_event *out, enum at_frame_encoding clock);

/* The predicted encoding (FORMAT.md section 4.2): encodes the committed slots of slots[0..n)
 * into out, which holds at least at_events_encode_bound(n) bytes, reading each slot's last word
 * with acquire as at_events_encode does. Returns the bytes written; fills info. */
size_t at_events_predict(const struct at_event *slots, uint32_t n, uint8_t *out,
                         struct at_block_info *info);

/* Decodes `count` events that at_events_predict wrote into in[0..len). Returns 0, or -EINVAL
 * when the bytes are malformed or do not end with the last event. */
int at_events_unpredict(const uint8_t *in, size_t len, uint32_t count, struct at_event *out);

/* The entropy stage of encoding 3: Huffman coding of the predicted bytes, as one zstd frame
 * without matches. at_events_entropy_init sets cctx up for it; at_events_entropy compresses
 * in[0..len) into out[0..cap) and returns the size, or 0 when it fails. */
int at_events_entropy_init(struct ZSTD_CCtx_s *cctx);
size_t at_events_entropy(struct ZSTD_CCtx_s *cctx, uint8_t *out, size_t cap, const uint8_t *in,
                         size_t len);

#endif
