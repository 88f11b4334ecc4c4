/* tracegen.h: builds real trace files in memory for the decoder's tests: the file header, META
 * frames of records, EVENTS frames encoded with at_events_encode and compressed with zstd, as
 * FORMAT.md describes them, written independently of the decoder. It logs where each frame
 * lies, so a test can tell which events a cut or a flipped byte must cost. Header-only, because
 * every .c file in tests/unit/ is a test program of its own. */
#ifndef TRACEGEN_H
#define TRACEGEN_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "at_codec.h"
#include "at_format.h"

struct tg_frame_log {
    size_t offset, size; /* the whole frame, header included */
    uint8_t type;
    uint32_t count; /* EVENTS: events; META: records */
};

struct tg {
    uint8_t *buf; /* the file */
    size_t len, cap;
    uint8_t *meta; /* records waiting for tg_meta_flush */
    size_t meta_len, meta_cap;
    uint32_t meta_count, meta_seq;
    uint8_t encoding;     /* of the frames written: AT_ENC_ZSTD or AT_ENC_RAW */
    uint16_t header_size; /* of the frame headers written; 56, or more to test skipping */
    struct tg_frame_log *frames;
    size_t nframes;
};

static void *tg_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    while (*cap < need)
        *cap = *cap ? *cap * 2 : 256;
    p = realloc(p, *cap * size);
    if (!p)
        abort();
    return p;
}

static void tg_put(struct tg *g, const void *bytes, size_t n)
{
    g->buf = tg_grow(g->buf, &g->cap, g->len + n, 1);
    memcpy(g->buf + g->len, bytes, n);
    g->len += n;
}

/* A new trace of the given version; its file header says header_size bytes (>= 16, padded). */
static void tg_init_version(struct tg *g, uint16_t major, uint16_t minor, uint32_t header_size)
{
    *g = (struct tg){.encoding = AT_ENC_ZSTD, .header_size = AT_FRAME_HEADER_SIZE};
    struct at_file_header h = {
        .version_major = major, .version_minor = minor, .header_size = header_size};
    memcpy(h.magic, AT_FILE_MAGIC, AT_FILE_MAGIC_LEN);
    tg_put(g, &h, sizeof h);
    static const uint8_t zero[64];
    tg_put(g, zero, header_size - sizeof h);
}

static void tg_init(struct tg *g)
{
    tg_init_version(g, AT_FORMAT_MAJOR, AT_FORMAT_MINOR, sizeof(struct at_file_header));
}

/* One frame around payload raw[0..raw_len), stored with g->encoding; table[0..table_len) (a
 * block table) follows the 56 header bytes and counts in header_size. */
static void tg_frame_table(struct tg *g, uint8_t type, uint32_t tid, uint32_t seq, uint32_t count,
                           const void *raw, size_t raw_len, const struct at_block_info *info,
                           const void *table, size_t table_len)
{
    size_t bound = ZSTD_compressBound(raw_len);
    uint8_t *payload = malloc(bound ? bound : 1);
    size_t payload_len = raw_len;
    if (g->encoding == AT_ENC_ZSTD)
        payload_len = ZSTD_compress(payload, bound, raw, raw_len, 3);
    else if (raw_len)
        memcpy(payload, raw, raw_len);
    if (ZSTD_isError(payload_len))
        abort();
    struct at_frame_header h = {
        .magic = AT_FRAME_MAGIC,
        .type = type,
        .encoding = g->encoding,
        .header_size = (uint16_t)(g->header_size + table_len),
        .tid = tid,
        .seq = seq,
        .count = count,
        .payload_size = (uint32_t)payload_len,
        .raw_size = (uint32_t)raw_len,
        .payload_crc = at_crc32c(0, payload, payload_len),
        .first_tsc = info ? info->first_tsc : 0,
        .last_tsc = info ? info->last_tsc : 0,
        .torn = info ? info->torn : 0,
    };
    h.header_crc = at_crc32c(0, &h, offsetof(struct at_frame_header, header_crc));
    g->frames = realloc(g->frames, (g->nframes + 1) * sizeof *g->frames);
    g->frames[g->nframes++] =
        (struct tg_frame_log){g->len, h.header_size + payload_len, type, count};
    tg_put(g, &h, sizeof h);
    if (table_len)
        tg_put(g, table, table_len);
    static const uint8_t zero[256];
    tg_put(g, zero, g->header_size - sizeof h);
    tg_put(g, payload, payload_len);
    free(payload);
}

/* One frame around payload raw[0..raw_len), stored with g->encoding. */
static void tg_frame(struct tg *g, uint8_t type, uint32_t tid, uint32_t seq, uint32_t count,
                     const void *raw, size_t raw_len, const struct at_block_info *info)
{
    tg_frame_table(g, type, tid, seq, count, raw, raw_len, info, NULL, 0);
}

/* An EVENTS frame of the committed slots among slots[0..n). Returns the events it holds. */
static uint32_t tg_events(struct tg *g, uint32_t tid, uint32_t seq, const struct at_event *slots,
                          uint32_t n)
{
    uint8_t *raw = malloc(at_events_encode_bound(n) + 1);
    struct at_block_info info;
    size_t len = at_events_encode(slots, n, raw, &info, NULL);
    tg_frame(g, AT_FRAME_EVENTS, tid, seq, info.count, raw, len, &info);
    free(raw);
    return info.count;
}

/* One frame of nblocks blocks of thread tid (AT_FRAME_EVENTS_BLOCKS, minor version 3): block b
 * is the committed slots among slots[b * n .. (b + 1) * n), numbered seqs[b], in that order in
 * the table. Returns the events it holds. */
static uint32_t tg_events_blocks(struct tg *g, uint32_t tid, const uint32_t *seqs, uint32_t nblocks,
                                 const struct at_event *slots, uint32_t n)
{
    uint8_t *raw = malloc(at_events_encode_bound(n * nblocks) + 1);
    struct {
        struct at_frame_blocks head;
        struct at_frame_block entry[AT_FRAME_MAX_BLOCKS];
    } table = {.head.count = nblocks};
    struct at_block_info all = {0};
    size_t len = 0;
    for (uint32_t b = 0; b < nblocks; b++) {
        struct at_block_info one;
        size_t part = at_events_encode(slots + (size_t)b * n, n, raw + len, &one, NULL);
        table.entry[b] = (struct at_frame_block){seqs[b],        one.count,     one.torn,
                                                 (uint32_t)part, one.first_tsc, one.last_tsc};
        if (one.count && (all.count == 0 || one.first_tsc < all.first_tsc))
            all.first_tsc = one.first_tsc;
        all.last_tsc = one.last_tsc > all.last_tsc ? one.last_tsc : all.last_tsc;
        all.count += one.count;
        all.torn += one.torn;
        len += part;
    }
    size_t table_len = sizeof table.head + nblocks * sizeof table.entry[0];
    table.head.crc = at_crc32c(0, table.entry, table_len - sizeof table.head);
    tg_frame_table(g, AT_FRAME_EVENTS_BLOCKS, tid, seqs[0], all.count, raw, len, &all, &table,
                   table_len);
    free(raw);
    return all.count;
}

/* An EVENTS frame as format 1 wrote it: actor, peer and msg each a delta against the previous
 * event. Every slot must be committed. */
static void tg_events_format1(struct tg *g, uint32_t tid, uint32_t seq,
                              const struct at_event *slots, uint32_t n)
{
    uint8_t *raw = malloc(at_events_encode_bound(n) + 1), *p = raw;
    struct at_block_info info = {.count = n, .first_tsc = UINT64_MAX};
    for (uint32_t i = 0; i < n; i++) {
        info.first_tsc = slots[i].tsc < info.first_tsc ? slots[i].tsc : info.first_tsc;
        info.last_tsc = slots[i].tsc > info.last_tsc ? slots[i].tsc : info.last_tsc;
    }
    for (uint32_t i = 0; i < n; i++)
        *p++ = slots[i].kind;
    for (uint32_t i = 0; i < n; i++)
        *p++ = slots[i].path;
    for (uint32_t i = 0; i < n; i++)
        p += at_varint_put(p, slots[i].core);
    for (uint32_t i = 0; i < n; i++)
        p += at_varint_put(p, at_zigzag(slots[i].tsc - (i ? slots[i - 1].tsc : info.first_tsc)));
    size_t fields[] = {offsetof(struct at_event, actor), offsetof(struct at_event, peer),
                       offsetof(struct at_event, msg)};
    for (size_t f = 0; f < 3; f++) {
        uint64_t previous = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t v;
            memcpy(&v, (const char *)&slots[i] + fields[f], sizeof v);
            p += at_varint_put(p, at_zigzag(v - previous));
            previous = v;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        p += at_varint_put(p, slots[i].name);
    tg_frame(g, AT_FRAME_EVENTS, tid, seq, n, raw, (size_t)(p - raw), &info);
    free(raw);
}

/* ---- META records ---- */

struct tg_body {
    uint8_t b[4096];
    size_t n;
};

static void tb_num(struct tg_body *b, uint64_t v)
{
    b->n += at_varint_put(b->b + b->n, v);
}

static void tb_u8(struct tg_body *b, uint8_t v)
{
    b->b[b->n++] = v;
}

static void tb_bytes(struct tg_body *b, const void *s, size_t len)
{
    tb_num(b, len);
    memcpy(b->b + b->n, s, len);
    b->n += len;
}

static void tb_str(struct tg_body *b, const char *s)
{
    tb_bytes(b, s, strlen(s));
}

static void tg_record(struct tg *g, uint8_t type, const struct tg_body *body)
{
    uint8_t head[1 + AT_VARINT_MAX];
    head[0] = type;
    size_t head_len = 1 + at_varint_put(head + 1, body->n);
    g->meta = tg_grow(g->meta, &g->meta_cap, g->meta_len + head_len + body->n, 1);
    memcpy(g->meta + g->meta_len, head, head_len);
    memcpy(g->meta + g->meta_len + head_len, body->b, body->n);
    g->meta_len += head_len + body->n;
    g->meta_count++;
}

static void tg_meta_flush(struct tg *g)
{
    tg_frame(g, AT_FRAME_META, 0, g->meta_seq++, g->meta_count, g->meta, g->meta_len, NULL);
    g->meta_len = 0;
    g->meta_count = 0;
}

static void tg_process_ring(struct tg *g, uint64_t pid, const char *exe, const char *ring)
{
    struct tg_body b = {.n = 0};
    tb_num(&b, pid);
    tb_num(&b, 1);
    tb_num(&b, 64);
    tb_u8(&b, AT_MODE_DROP);
    tb_str(&b, exe);
    tb_str(&b, ring);
    tg_record(g, AT_META_PROCESS, &b);
}

static void tg_process(struct tg *g, uint64_t pid, const char *exe)
{
    tg_process_ring(g, pid, exe, "/dev/shm/actortrace-test");
}

static void tg_clock(struct tg *g, uint64_t tsc, uint64_t mono_ns)
{
    struct tg_body b = {.n = 0};
    tb_num(&b, tsc);
    tb_num(&b, mono_ns);
    tb_num(&b, mono_ns + 1700000000000000000ull);
    tg_record(g, AT_META_CLOCK, &b);
}

static void tg_thread(struct tg *g, uint32_t tid, uint64_t tsc, const char *name)
{
    struct tg_body b = {.n = 0};
    tb_num(&b, tid);
    tb_num(&b, tsc);
    tb_str(&b, name);
    tg_record(g, AT_META_THREAD, &b);
}

static void tg_name(struct tg *g, uint8_t space, uint64_t id, const void *name, size_t len)
{
    struct tg_body b = {.n = 0};
    tb_u8(&b, space);
    tb_num(&b, id);
    tb_bytes(&b, name, len);
    tg_record(g, AT_META_NAME, &b);
}

static void tg_lost(struct tg *g, uint32_t tid, uint8_t reason, uint64_t count, uint64_t first,
                    uint64_t last)
{
    struct tg_body b = {.n = 0};
    tb_num(&b, tid);
    tb_u8(&b, reason);
    tb_num(&b, count);
    tb_num(&b, first);
    tb_num(&b, last);
    tg_record(g, AT_META_LOST, &b);
}

static void tg_end(struct tg *g, uint64_t written, uint64_t dropped, uint64_t threads,
                   uint64_t blocks)
{
    struct tg_body b = {.n = 0};
    tb_num(&b, written);
    tb_num(&b, dropped);
    tb_num(&b, threads);
    tb_num(&b, blocks);
    tg_record(g, AT_META_END, &b);
}

/* Writes the first len bytes of the file (all of it when len is the file's length). */
static int tg_save(const struct tg *g, const char *path, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, g->buf, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

static void tg_free(struct tg *g)
{
    free(g->buf);
    free(g->meta);
    free(g->frames);
    *g = (struct tg){.buf = NULL};
}

#endif
