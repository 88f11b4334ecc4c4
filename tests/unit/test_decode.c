/* End-to-end tests of the decoder on trace files written by tracegen.h: counts, order, names,
 * clock conversion, JSONL validity, and damage: the file cut at every offset, every byte of
 * every frame flipped, garbage between frames, unknown versions and record types. Prints
 * "ok - name" or "not ok - name" per check; exits 1 if any failed.
 *
 * `test_decode --gen FILE EVENTS [THREADS]` writes a synthetic trace instead (4096-event
 * blocks, realistic ids and deltas), for measuring the decoder's speed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"
#include "at_events.h"
#include "decode.h"
#include "jsoncheck.h"
#include "tracegen.h"

static char dir[] = "/tmp/test_decode.XXXXXX";

static char *tmp_path(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

/* ---- Capturing what the decoder hands an output format ---- */

struct seen {
    uint32_t tid;
    uint64_t pid, ts_ns;
    struct at_event ev;
};

static struct seen *seen;
static size_t nseen, seen_cap;

static int capture_event(struct out *o, const struct decode *d, const struct merged *e)
{
    (void)o;
    (void)d;
    if (nseen == seen_cap) {
        seen_cap = seen_cap ? seen_cap * 2 : 1024;
        seen = realloc(seen, seen_cap * sizeof *seen);
    }
    seen[nseen++] = (struct seen){e->thread->tid, e->trace->process.pid, e->ts_ns, *e->ev};
    return 0;
}

static const struct output_ops capture_ops = {.name = "capture", .event = capture_event};

struct result {
    int open_err; /* at__decode_open's result; the rest is valid when it is 0 */
    int status;
    struct summary sum;
};

/* Decodes paths through ops into fd (-1 when ops writes nothing), with what their ring files
 * hold when recover is set. */
static struct result decode_recovering(const char *const *paths, size_t n,
                                       const struct output_ops *ops, int fd, bool recover)
{
    struct result r = {0};
    struct decode d;
    nseen = 0;
    r.open_err = at__decode_open(&d, paths, n, NULL);
    if (r.open_err < 0)
        return r;
    for (size_t i = 0; recover && i < n; i++)
        at__trace_recover(&d.traces[i], false);
    struct out o;
    at__out_init(&o, fd);
    r.status = at__decode_run(&d, ops, &o, &r.sum);
    at__out_flush(&o);
    at__out_free(&o);
    at__decode_close(&d);
    return r;
}

static struct result decode_files(const char *const *paths, size_t n, const struct output_ops *ops,
                                  int fd)
{
    return decode_recovering(paths, n, ops, fd, false);
}

static struct result decode_file(const char *path)
{
    return decode_files(&path, 1, &capture_ops, -1);
}

/* ---- The standard trace ---- */

enum { TID0 = 101, NTHREADS = 3 };

struct shape {
    uint32_t per_block, blocks;
    uint64_t pid;
    int end;            /* write the END record */
    int raw;            /* store every frame raw (no zstd) */
    uint64_t end_extra; /* added to END.events_written */
    uint32_t group;     /* > 1: up to this many blocks of a thread to a frame (write_grouped) */
    uint16_t minor;     /* the file header's minor version; 0: the current one */
};

/* name, prefixed with what and ": " when what is not empty (valid until the next call). */
static const char *label(const char *what, const char *name)
{
    static char text[256];
    snprintf(text, sizeof text, "%s%s%s", what, *what ? ": " : "", name);
    return text;
}

/* Weird bytes for a name: quote, backslash, control characters, invalid UTF-8 (a stray
 * continuation, a truncated sequence, an overlong form, a surrogate), then valid UTF-8. */
static const char weird[] = "q\"b\\n\n\x01\x1f\x7f|\x80|\xc3|\xc0\xaf|\xed\xa0\x80|"
                            "\xc3\xa9\xf0\x9d\x84\x9e";

static const uint8_t kinds[] = {
    AT_EV_SEND, AT_EV_RECV, AT_EV_STEP_BEGIN, AT_EV_STEP_END, AT_EV_SCHEDULE, 64, 11};

/* Event k of the trace (k counts over all threads): thread k % 3, tsc 2000 + 10 k, and msg k + 1
 * so that order and identity can be checked on the way out. */
static struct at_event event_k(uint64_t k)
{
    uint32_t i = (uint32_t)(k / NTHREADS);
    return (struct at_event){
        .tsc = 2000 + 10 * k,
        .actor = 1 + i % 2,
        .peer = i % 5 == 4 ? 0 : 2 - i % 2,
        .msg = k + 1,
        .name = i % 4,
        .core = (uint16_t)(k % NTHREADS),
        .path = i % 3 == 2 ? 9 : i % 3,
        .kind = kinds[i % sizeof kinds],
    };
}

static void write_meta(struct tg *g, uint64_t pid)
{
    tg_process(g, pid, "/usr/bin/pingpong");
    tg_clock(g, 1000, 1000000);
    for (uint32_t t = 0; t < NTHREADS; t++) {
        char name[32];
        snprintf(name, sizeof name, t ? "worker-%u" : "main", t);
        tg_thread(g, TID0 + t, 1000, name);
    }
    tg_name(g, AT_NAME_MSG, 1, "PING", 4);
    tg_name(g, AT_NAME_MSG, 2, "PONG", 4);
    tg_name(g, AT_NAME_MSG, 3, weird, sizeof weird - 1);
    tg_name(g, AT_NAME_ACTOR, 1, "pinger", 6);
    tg_name(g, AT_NAME_ACTOR, 2, "ponger", 6);
    tg_name(g, AT_NAME_PATH, 1, "local", 5);
    tg_name(g, AT_NAME_PATH, 2, "remote", 6);
    tg_name(g, AT_NAME_EVENT, 64, "gc_pause", 8);
    tg_meta_flush(g);
}

/* The slots of block number `block` of thread t; block 0 of thread 1 has two torn slots. */
static void fill_block(struct at_event *slots, const struct shape *s, uint32_t t, uint32_t block,
                       uint64_t *torn)
{
    for (uint32_t i = 0; i < s->per_block; i++)
        slots[i] = event_k(((uint64_t)block * s->per_block + i) * NTHREADS + t);
    if (t == 1 && block == 0) {
        slots[0].kind = slots[s->per_block / 2].kind = 0;
        *torn = 2;
    }
}

/* One block of each thread per round; thread 0 writes each pair of blocks in reverse seq order,
 * one frame is stored raw, and block 0 of thread 1 has two torn slots. Returns the events. */
static uint64_t write_blocks(struct tg *g, const struct shape *s, uint64_t *torn)
{
    uint64_t total = 0;
    struct at_event *slots = malloc(s->per_block * sizeof *slots);
    for (uint32_t b = 0; b < s->blocks; b++) {
        for (uint32_t t = 0; t < NTHREADS; t++) {
            uint32_t block = t == 0 ? b ^ 1 : b; /* 1, 0, 3, 2, ... */
            if (block >= s->blocks)
                block = b;
            fill_block(slots, s, t, block, torn);
            g->encoding = s->raw || (t == 2 && b == 1) ? AT_ENC_RAW : AT_ENC_ZSTD;
            total += tg_events(g, TID0 + t, block, slots, s->per_block);
            g->encoding = s->raw ? AT_ENC_RAW : AT_ENC_ZSTD;
        }
    }
    free(slots);
    return total;
}

/* As write_blocks, but up to s->group blocks of a thread to a frame, as the recorder writes
 * them since minor version 3 (a thread's last frame may hold one: an EVENTS frame); thread 0's
 * frames list their blocks in reverse seq order. Returns the events. */
static uint64_t write_grouped(struct tg *g, const struct shape *s, uint64_t *torn)
{
    uint64_t total = 0;
    struct at_event *slots = malloc((size_t)s->group * s->per_block * sizeof *slots);
    for (uint32_t first = 0; first < s->blocks; first += s->group) {
        uint32_t n = s->blocks - first < s->group ? s->blocks - first : s->group;
        for (uint32_t t = 0; t < NTHREADS; t++) {
            uint32_t seqs[AT_FRAME_MAX_BLOCKS];
            for (uint32_t b = 0; b < n; b++) {
                seqs[b] = t == 0 ? first + n - 1 - b : first + b;
                fill_block(slots + (size_t)b * s->per_block, s, t, seqs[b], torn);
            }
            total += n == 1 ? tg_events(g, TID0 + t, seqs[0], slots, s->per_block)
                            : tg_events_blocks(g, TID0 + t, seqs, n, slots, s->per_block);
        }
    }
    free(slots);
    return total;
}

/* The second clock sample makes 2 ticks a nanosecond: event k is at 1000500 + 5 k ns. */
static uint64_t build(struct tg *g, const struct shape *s, uint64_t *torn)
{
    if (s->minor)
        tg_init_version(g, AT_FORMAT_MAJOR, s->minor, sizeof(struct at_file_header));
    else
        tg_init(g);
    g->encoding = s->raw ? AT_ENC_RAW : AT_ENC_ZSTD;
    write_meta(g, s->pid);
    uint64_t total = s->group > 1 ? write_grouped(g, s, torn) : write_blocks(g, s, torn);
    tg_clock(g, 2001000, 2000000);
    tg_lost(g, TID0 + 1, AT_LOST_DROPPED, 5, 3000, 4000);
    if (s->end)
        tg_end(g, total + s->end_extra, 5, NTHREADS, (uint64_t)s->blocks * NTHREADS);
    tg_meta_flush(g);
    return total;
}

static uint64_t expected_ns(uint64_t k)
{
    return 1000500 + 5 * k;
}

/* ---- Tests ---- */

/* The standard trace of shape s decodes whole and in order; what prefixes the checks' names. */
static void check_clean(const struct shape *s, const char *what)
{
    struct tg g;
    uint64_t torn = 0;
    uint64_t total = build(&g, s, &torn);
    const char *path = tmp_path("clean.trace");
    tg_save(&g, path, g.len);
    struct result r = decode_file(path);
    check(r.open_err == 0 && r.status == 0, label(what, "a clean trace decodes with status 0"));
    check(r.sum.events == total && nseen == total, label(what, "every event is decoded"));
    check(r.sum.threads == 3 && r.sum.files == 1 && r.sum.dropped == 5 && !r.sum.truncated &&
              r.sum.damaged_frames == 0 && r.sum.torn == torn,
          label(what, "summary: threads, files, dropped, truncated, damaged, torn"));
    int ordered = 1, exact = 1, fields = 1;
    for (size_t i = 0; i < nseen; i++) {
        uint64_t k = seen[i].ev.msg - 1;
        struct at_event want = event_k(k);
        ordered &= i == 0 || seen[i].ev.msg > seen[i - 1].ev.msg;
        exact &= seen[i].ts_ns == expected_ns(k);
        fields &= seen[i].tid == TID0 + k % NTHREADS && seen[i].ev.actor == want.actor &&
                  seen[i].ev.peer == want.peer && seen[i].ev.kind == want.kind &&
                  seen[i].ev.core == want.core && seen[i].ev.path == want.path &&
                  seen[i].ev.name == want.name;
    }
    check(ordered, label(what, "events come out in time order across threads, blocks sorted "
                               "by seq"));
    check(exact, label(what, "ts_ns interpolated between the clock samples"));
    check(fields, label(what, "every field of every event survives"));
    tg_free(&g);
}

static void test_clean(void)
{
    struct shape s = {.per_block = 50, .blocks = 4, .pid = 1234, .end = 1};
    check_clean(&s, "");
    s.minor = 2;
    check_clean(&s, "minor version 2 (one block a frame)");
    s = (struct shape){.per_block = 50, .blocks = 7, .pid = 1234, .end = 1, .group = 3};
    check_clean(&s, "several blocks a frame");
    s.raw = 1;
    check_clean(&s, "several blocks a frame, stored raw");
}

static int count_lines(const char *text, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *buf = malloc(*len + 1);
    *len = fread(buf, 1, *len, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

struct line_stats {
    int valid;    /* every line is JSON */
    int senders;  /* send lines naming a sender */
    int peers;    /* schedule lines naming a peer */
    int misnamed; /* send lines with "peer", schedule lines with "sender" */
    int names;    /* bits: the name combinations looked for were seen */
    int weird;    /* the weird message name came out escaped as expected */
    const char *last;
};

/* Checks every line of a JSONL output (splitting text in place). */
static void check_lines(char *text, size_t len, struct line_stats *st)
{
    *st = (struct line_stats){.valid = 1};
    for (char *line = text; line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        if (!nl)
            break;
        *nl = '\0';
        st->valid &= json_valid(line, (size_t)(nl - line));
        if (json_has(line, "event", "\"send\"")) {
            st->senders += json_num(line, "sender") >= 0;
            st->misnamed += json_num(line, "peer") >= 0;
        }
        if (json_has(line, "event", "\"schedule\"")) {
            st->peers += json_num(line, "peer") >= 0;
            st->misnamed += json_num(line, "sender") >= 0;
        }
        if (json_has(line, "msg_name", "\"PING\"") && json_has(line, "path", "\"local\""))
            st->names |= 1;
        if (json_has(line, "event", "\"gc_pause\"") && json_has(line, "actor_name", "\"pinger\""))
            st->names |= 2;
        if (json_has(line, "event", "\"kind_11\"") && json_has(line, "path", "\"path_9\""))
            st->names |= 4;
        if (strstr(line, "\"msg_name\":\"q\\\"b\\\\n\\n\\u0001\\u001f\x7f|\xef\xbf\xbd|"))
            st->weird = 1;
        st->last = line;
        line = nl + 1;
    }
}

static void test_jsonl(void)
{
    struct tg g;
    uint64_t torn = 0;
    struct shape s = {.per_block = 40, .blocks = 3, .pid = 77, .end = 1};
    uint64_t total = build(&g, &s, &torn);
    const char *path = tmp_path("jsonl.trace"), *out_path = tmp_path("jsonl.out");
    tg_save(&g, path, g.len);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct result r = decode_files(&path, 1, &at__jsonl_ops, fd);
    close(fd);
    size_t len = 0;
    char *text = read_file(out_path, &len);
    check(r.status == 0 && text && count_lines(text, len) == (int)total + 1,
          "JSONL: one line per event and a summary line");
    struct line_stats st;
    check_lines(text, len, &st);
    const char *last = st.last;
    check(st.valid, "JSONL: every line is valid JSON (names with control bytes, bad UTF-8)");
    check(st.weird, "JSONL: quotes, backslashes, controls escaped; bad UTF-8 becomes U+FFFD");
    check(st.senders > 0 && st.peers > 0 && st.misnamed == 0,
          "JSONL: the peer is \"sender\" for send, \"peer\" otherwise");
    check(st.names == 7, "JSONL: message, path, actor and registered kind names; kind_N, path_N");
    check(last && json_has(last, "summary", "true") &&
              json_num(last, "events") == (long long)total && json_num(last, "dropped") == 5 &&
              json_num(last, "threads") == 3 && json_has(last, "truncated", "false") &&
              json_num(last, "damaged_frames") == 0 && json_num(last, "torn") == (long long)torn &&
              json_num(last, "files") == 1 &&
              strstr(last, "\"lost\":[{\"tid\":102,\"reason\":\"dropped\",\"count\":5,"
                           "\"from_ns\":1001000,\"to_ns\":1001500}]"),
          "JSONL: the summary line");
    free(text);
    tg_free(&g);
}

/* Events in EVENTS frames that end at or before `cut`. */
static uint64_t events_before(const struct tg *g, size_t cut)
{
    uint64_t n = 0;
    for (size_t i = 0; i < g->nframes; i++)
        if (g->frames[i].type != AT_FRAME_META && g->frames[i].offset + g->frames[i].size <= cut)
            n += g->frames[i].count;
    return n;
}

/* group: as in struct shape; what prefixes the checks' names. */
static void test_cut_everywhere(uint32_t group, const char *what)
{
    struct tg g;
    uint64_t torn = 0;
    struct shape s = {.per_block = 6, .blocks = 2, .pid = 5, .end = 1, .group = group};
    build(&g, &s, &torn);
    const char *path = tmp_path("cut.trace");
    int reported = 1, kept = 1;
    for (size_t cut = 0; cut < g.len; cut++) {
        tg_save(&g, path, cut);
        struct result r = decode_file(path);
        reported &= r.open_err == 0 && r.status == 1 && r.sum.truncated;
        kept &= r.sum.events == events_before(&g, cut);
    }
    check(reported, label(what, "a file cut at any byte decodes, reported as truncated (status "
                                "1)"));
    check(kept, label(what, "a cut file keeps every frame before the cut"));
    tg_free(&g);
}

/* Events of the EVENTS frame holding offset, if any. */
static uint64_t events_at(const struct tg *g, size_t offset)
{
    for (size_t i = 0; i < g->nframes; i++)
        if (offset >= g->frames[i].offset && offset < g->frames[i].offset + g->frames[i].size)
            return g->frames[i].type != AT_FRAME_META ? g->frames[i].count : 0;
    return 0;
}

/* group: as in struct shape; what prefixes the checks' names. */
static void test_flip_everywhere(uint32_t group, const char *what)
{
    struct tg g;
    uint64_t torn = 0;
    struct shape s = {.per_block = 6, .blocks = 2, .pid = 5, .end = 1, .group = group};
    uint64_t total = build(&g, &s, &torn);
    const char *path = tmp_path("flip.trace");
    int reported = 1, kept = 1;
    static const uint8_t patterns[] = {0x01, 0x80, 0xFF};
    for (size_t off = 16; off < g.len; off++) {
        for (size_t p = 0; p < sizeof patterns; p++) {
            g.buf[off] ^= patterns[p];
            tg_save(&g, path, g.len);
            g.buf[off] ^= patterns[p];
            struct result r = decode_file(path);
            reported &= r.open_err == 0 && r.status == 1 && r.sum.damaged_frames >= 1;
            kept &= r.sum.events == total - events_at(&g, off);
        }
    }
    check(reported, label(what, "a flipped byte in any frame is reported as damage (status 1)"));
    check(kept, label(what, "a flipped byte costs only the frame it is in"));
    tg_free(&g);
}

static void test_garbage_between_frames(void)
{
    struct tg g;
    uint64_t torn = 0;
    struct shape s = {.per_block = 10, .blocks = 2, .pid = 5, .end = 1};
    uint64_t total = build(&g, &s, &torn);
    size_t at = g.frames[2].offset;
    uint8_t *copy = malloc(g.len + 300);
    memcpy(copy, g.buf, at);
    for (size_t i = 0; i < 300; i++)
        copy[at + i] = (uint8_t)("garbage!"[i % 8]);
    memcpy(copy + at + 300, g.buf + at, g.len - at);
    free(g.buf);
    g.buf = copy;
    g.len += 300;
    const char *path = tmp_path("garbage.trace");
    tg_save(&g, path, g.len);
    struct result r = decode_file(path);
    check(r.status == 1 && r.sum.damaged_frames == 1 && r.sum.events == total,
          "garbage between frames: one damage report, every event kept");
    tg_free(&g);
}

/* Recomputes a frame's checksums after a mutation, so the damage gets past them. */
static void refresh_crcs(uint8_t *buf, size_t len, size_t off)
{
    struct at_frame_header h;
    memcpy(&h, buf + off, sizeof h);
    size_t end = off + h.header_size + (size_t)h.payload_size;
    if (h.header_size >= AT_FRAME_HEADER_SIZE && end <= len)
        h.payload_crc = at_crc32c(0, buf + off + h.header_size, h.payload_size);
    h.header_crc = at_crc32c(0, &h, offsetof(struct at_frame_header, header_crc));
    memcpy(buf + off, &h, sizeof h);
}

/* Sets one header field of a frame to an edge or random value. */
static void mutate_header(uint8_t *frame)
{
    static const size_t fields[] = {4, 5, 6, 8, 12, 16, 20, 24, 32, 40, 48};
    static const uint8_t widths[] = {1, 1, 2, 4, 4, 4, 4, 4, 8, 8, 4};
    size_t f = rnd() % (sizeof fields / sizeof *fields);
    uint64_t old = 0, value;
    memcpy(&old, frame + fields[f], widths[f]);
    switch (rnd() % 4) {
    case 0:
        value = 0;
        break;
    case 1:
        value = old + 1 - 2 * (rnd() % 2);
        break;
    case 2:
        value = UINT64_MAX;
        break;
    default:
        value = rnd() % 300;
    }
    memcpy(frame + fields[f], &value, widths[f]);
}

/* Frames whose checksums match but whose contents are wrong: payload bytes changed, header
 * fields set to edge values. The decoder must report or tolerate them, never crash (this runs
 * under ASan and UBSan). */
static void test_bad_contents(void)
{
    int survived = 1;
    for (int raw = 0; raw < 2; raw++) {
        struct tg g;
        uint64_t torn = 0;
        struct shape s = {.per_block = 12, .blocks = 2, .pid = 5, .end = 1, .raw = raw};
        build(&g, &s, &torn);
        uint8_t *copy = malloc(g.len);
        const char *path = tmp_path("contents.trace");
        for (int iter = 0; iter < 1500; iter++) {
            memcpy(copy, g.buf, g.len);
            const struct tg_frame_log *f = &g.frames[rnd() % g.nframes];
            size_t payload = AT_FRAME_HEADER_SIZE, size = f->size - payload;
            for (uint64_t n = 1 + rnd() % 3; size > 0 && n > 0; n--)
                copy[f->offset + payload + rnd() % size] ^= (uint8_t)(1 + rnd() % 255);
            if (rnd() % 2)
                mutate_header(copy + f->offset);
            refresh_crcs(copy, g.len, f->offset);
            tg_save(&(struct tg){.buf = copy}, path, g.len);
            struct result r = decode_file(path);
            survived &= r.open_err == 0 && (r.status == 0 || r.status == 1);
        }
        free(copy);
        tg_free(&g);
    }
    check(survived, "frames with good checksums and bad contents are survived");
}

static void test_extensions(void)
{
    struct tg g;
    tg_init_version(&g, AT_FORMAT_MAJOR, 7, 24);
    g.header_size = 64;
    write_meta(&g, 9);
    struct tg_body b = {.n = 0};
    tb_num(&b, 1);
    tb_str(&b, "a record of a later minor version");
    tg_record(&g, 42, &b);
    b.n = 0;
    tb_u8(&b, AT_NAME_MSG);
    tb_num(&b, 1);
    tb_str(&b, "PING2");
    tb_num(&b, 12345); /* a field appended by a later minor version */
    tg_record(&g, AT_META_NAME, &b);
    tg_meta_flush(&g);
    tg_frame(&g, 9, 0, 0, 0, "future", 6, NULL);
    struct at_event ev[3] = {event_k(0), event_k(3), event_k(6)};
    tg_events(&g, TID0, 0, ev, 3);
    tg_end(&g, 3, 0, 1, 1);
    tg_meta_flush(&g);
    const char *path = tmp_path("ext.trace");
    tg_save(&g, path, g.len);
    struct result r = decode_file(path);
    check(r.status == 0 && r.sum.events == 3 && r.sum.damaged_frames == 0,
          "minor version, longer headers, unknown frame and record types, longer bodies");
    tg_free(&g);
}

/* A format 1 file, whose deltas are against the previous event rather than the previous event
 * of the same kind: every field of every event still comes out as written. */
static void test_format1(void)
{
    struct tg g;
    tg_init_version(&g, 1, 0, 16);
    write_meta(&g, 77);
    enum { N = 60 };
    struct at_event slots[N];
    for (uint32_t i = 0; i < N; i++)
        slots[i] = event_k((uint64_t)i * NTHREADS);
    tg_events_format1(&g, TID0, 0, slots, N);
    tg_end(&g, N, 0, 1, 1);
    tg_meta_flush(&g);
    const char *path = tmp_path("format1.trace");
    tg_save(&g, path, g.len);
    struct result r = decode_file(path);
    int fields = r.open_err == 0 && r.status == 0 && nseen == N;
    for (size_t i = 0; fields && i < nseen; i++) {
        struct at_event want = slots[i];
        fields &= seen[i].ev.actor == want.actor && seen[i].ev.peer == want.peer &&
                  seen[i].ev.msg == want.msg && seen[i].ev.kind == want.kind &&
                  seen[i].ev.name == want.name && seen[i].ev.tsc == want.tsc;
    }
    check(fields, "a format 1 trace decodes, every field as written");
    tg_free(&g);
}

/* A ring file of pid with one block per entry of seqs, each of per_block events of thread 0,
 * in the given state (enum at_block_state). */
static void write_ring(const char *path, uint64_t pid, const uint32_t *seqs, const uint8_t *states,
                       uint32_t nblocks, uint32_t per_block)
{
    uint32_t block_size = sizeof(struct at_ring_block) + per_block * sizeof(struct at_event);
    size_t size = sizeof(struct at_ring_header) + (size_t)nblocks * block_size;
    uint8_t *ring = calloc(1, size);
    struct at_ring_header *h = (void *)ring;
    memcpy(h->magic, AT_RING_MAGIC, sizeof h->magic);
    *h = (struct at_ring_header){.block_size = block_size,
                                 .block_count = nblocks,
                                 .pid = (uint32_t)pid,
                                 .block_max = nblocks};
    memcpy(h->magic, AT_RING_MAGIC, sizeof h->magic);
    struct shape s = {.per_block = per_block};
    uint64_t torn = 0;
    for (uint32_t i = 0; i < nblocks; i++) {
        struct at_ring_block *b = (void *)(ring + sizeof *h + (size_t)i * block_size);
        *b = (struct at_ring_block){.state = states[i],
                                    .tid = TID0,
                                    .seq = seqs[i],
                                    .capacity = per_block,
                                    .used = per_block};
        fill_block((struct at_event *)(b + 1), &s, 0, seqs[i], &torn);
    }
    struct tg g = {.buf = ring, .len = size};
    tg_save(&g, path, size);
    free(ring);
}

/* A process killed after the writer wrote a frame of three blocks and before it gave them back
 * (still WRITING in the ring), with a fourth block FULL: recovery adds the fourth only. */
static void test_recover_after_frame(void)
{
    enum { PER_BLOCK = 20, PID = 2147480000 };
    const char *ring = tmp_path("ring");
    static const uint32_t seqs[] = {0, 1, 2, 3};
    static const uint8_t states[] = {AT_BLOCK_WRITING, AT_BLOCK_WRITING, AT_BLOCK_WRITING,
                                     AT_BLOCK_FULL};
    write_ring(ring, PID, seqs, states, 4, PER_BLOCK);
    struct tg g;
    tg_init(&g);
    tg_process_ring(&g, PID, "/usr/bin/killed", ring);
    tg_clock(&g, 1000, 1000000);
    tg_clock(&g, 2001000, 2000000);
    tg_meta_flush(&g);
    struct shape s = {.per_block = PER_BLOCK};
    struct at_event slots[3 * PER_BLOCK];
    uint64_t torn = 0;
    for (uint32_t b = 0; b < 3; b++)
        fill_block(slots + b * PER_BLOCK, &s, 0, b, &torn);
    tg_events_blocks(&g, TID0, seqs, 3, slots, PER_BLOCK);
    const char *path = tmp_path("killed.trace");
    tg_save(&g, path, g.len);
    struct result r = decode_recovering(&path, 1, &capture_ops, -1, true);
    int once = r.open_err == 0 && nseen == 4 * PER_BLOCK && r.sum.recovered == PER_BLOCK;
    for (size_t i = 0; once && i < nseen; i++)
        once &= seen[i].ev.msg == i * NTHREADS + 1; /* thread 0's events k = 0, 3, 6, ... */
    check(once, "recovery after a frame of several blocks adds only the blocks not in it");
    tg_free(&g);
}

static int open_error(const uint8_t *bytes, size_t len)
{
    const char *path = tmp_path("bad.trace");
    struct tg g = {.buf = (uint8_t *)bytes, .len = len};
    tg_save(&g, path, len);
    return decode_file(path).open_err;
}

static void test_refused(void)
{
    check(open_error((const uint8_t *)"hello, world: not a trace", 25) == -EBADMSG,
          "a file that is not a trace is refused");
    struct tg g;
    tg_init_version(&g, AT_FORMAT_MAJOR + 1, 0, 16);
    check(open_error(g.buf, g.len) == -ENOTSUP, "a newer major version is refused");
    tg_free(&g);
    tg_init_version(&g, 0, 9, 16);
    check(open_error(g.buf, g.len) == -ENOTSUP, "major version 0 is refused");
    tg_free(&g);
    const char *missing = tmp_path("missing.trace");
    check(decode_file(missing).open_err == -ENOENT, "a missing file is an I/O error");
    const char *empty = tmp_path("empty.trace");
    tg_save(&(struct tg){.buf = (uint8_t *)""}, empty, 0);
    struct result r = decode_file(empty);
    check(r.open_err == 0 && r.status == 1 && r.sum.truncated && r.sum.events == 0,
          "an empty file is a trace cut at byte 0");
}

static void test_end_checks(void)
{
    struct tg g;
    uint64_t torn = 0;
    struct shape s = {.per_block = 10, .blocks = 2, .pid = 5, .end = 0};
    uint64_t total = build(&g, &s, &torn);
    const char *path = tmp_path("noend.trace");
    tg_save(&g, path, g.len);
    struct result r = decode_file(path);
    check(r.status == 1 && r.sum.truncated && r.sum.events == total,
          "no END record: truncated, status 1, every event kept");
    tg_free(&g);

    s.end = 1;
    s.end_extra = 4;
    build(&g, &s, &torn);
    tg_save(&g, path, g.len);
    r = decode_file(path);
    check(r.status == 1 && !r.sum.truncated && r.sum.damaged_frames == 0,
          "END counting more events than decoded: status 1");
    tg_free(&g);
}

static void test_two_files(void)
{
    struct tg a, b;
    uint64_t torn = 0;
    struct shape s = {.per_block = 20, .blocks = 2, .pid = 1000, .end = 1};
    uint64_t total = build(&a, &s, &torn);
    s.pid = 2000;
    total += build(&b, &s, &torn);
    const char *paths[] = {tmp_path("a.trace"), tmp_path("b.trace")};
    tg_save(&a, paths[0], a.len);
    tg_save(&b, paths[1], b.len);
    struct result r = decode_files(paths, 2, &capture_ops, -1);
    int ordered = 1, both = 0;
    for (size_t i = 1; i < nseen; i++) {
        ordered &= seen[i].ts_ns >= seen[i - 1].ts_ns;
        ordered &= seen[i].ts_ns > seen[i - 1].ts_ns || seen[i].pid >= seen[i - 1].pid;
        both |= seen[i].pid == 1000 ? 1 : seen[i].pid == 2000 ? 2 : 4;
    }
    check(r.status == 0 && r.sum.events == total && r.sum.files == 2 && r.sum.threads == 6,
          "two files: every event of both");
    check(ordered && both == 3, "two files: one timeline, ties in file order");

    const char *out_path = tmp_path("two.out");
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    decode_files(paths, 2, &at__jsonl_ops, fd);
    close(fd);
    size_t len;
    char *text = read_file(out_path, &len);
    check(text && strstr(text, "\"pid\":1000,\"tid\":101,") && strstr(text, "\"pid\":2000,"),
          "two files: each event line names its pid");
    free(text);
    tg_free(&a);
    tg_free(&b);
}

/* The built command, when the tests run from the top of the tree after `make`. */
static void test_command(void)
{
    const char *cmd = "build/tracedecode";
    if (access(cmd, X_OK) != 0) {
        printf("ok - # SKIP %s not built\n", cmd);
        return;
    }
    struct tg g;
    uint64_t torn = 0;
    struct shape s = {.per_block = 10, .blocks = 2, .pid = 5, .end = 1};
    uint64_t total = build(&g, &s, &torn);
    const char *path = tmp_path("cmd.trace"), *out = tmp_path("cmd.out");
    tg_save(&g, path, g.len);
    char line[1200];
    snprintf(line, sizeof line, "%s -o %s %s", cmd, out, path);
    int clean = system(line);
    size_t len = 0;
    char *text = read_file(out, &len);
    check(WIFEXITED(clean) && WEXITSTATUS(clean) == 0 && text &&
              count_lines(text, len) == (int)total + 1,
          "tracedecode -o OUT TRACE: exit 0, one line per event and the summary");
    free(text);
    tg_save(&g, path, g.len - 1);
    snprintf(line, sizeof line, "%s %s >/dev/null 2>&1", cmd, path);
    int cut = system(line);
    snprintf(line, sizeof line, "%s --bogus >/dev/null 2>&1", cmd);
    int usage = system(line);
    check(WEXITSTATUS(cut) == 1 && WEXITSTATUS(usage) == 2, "exit status 1 when cut, 2 on usage");
    tg_free(&g);
}

/* ---- --gen: a large synthetic trace for measuring speed ---- */

static uint64_t gen_state = 0x2545F4914F6CDD1Dull;

static uint64_t gen_rnd(void)
{
    gen_state ^= gen_state << 13;
    gen_state ^= gen_state >> 7;
    gen_state ^= gen_state << 17;
    return gen_state;
}

/* Events of one thread's block: tsc steps of 50-1000 ticks, 1000 actors, 6 message names. */
static void gen_block(struct at_event *slots, uint32_t n, uint64_t *tsc, uint64_t *msg,
                      uint16_t core)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = gen_rnd();
        *tsc += 50 + r % 950;
        slots[i] = (struct at_event){.tsc = *tsc,
                                     .actor = 1 + (r >> 10) % 1000,
                                     .peer = (r >> 20) % 8 ? 1 + (r >> 30) % 1000 : 0,
                                     .msg = (*msg)++,
                                     .name = (uint32_t)(1 + (r >> 40) % 6),
                                     .core = core,
                                     .path = (uint8_t)(1 + (r >> 50) % 2),
                                     .kind = kinds[(r >> 54) % 5]};
    }
}

static int generate(const char *path, uint64_t events, uint32_t threads)
{
    enum { SLOTS = 4096 };
    struct tg g;
    tg_init(&g);
    tg_process(&g, 4242, "/usr/bin/bench");
    tg_clock(&g, 1000, 1000000000);
    static const char *msgs[] = {"PING", "PONG", "WORK", "DONE", "TICK", "STOP"};
    for (uint32_t i = 0; i < 6; i++)
        tg_name(&g, AT_NAME_MSG, i + 1, msgs[i], strlen(msgs[i]));
    tg_name(&g, AT_NAME_PATH, 1, "local", 5);
    tg_name(&g, AT_NAME_PATH, 2, "remote", 6);
    for (uint32_t t = 0; t < threads; t++)
        tg_thread(&g, 5000 + t, 1000, "worker");
    tg_meta_flush(&g);
    struct at_event *slots = malloc(SLOTS * sizeof *slots);
    uint64_t *tsc = calloc(threads, sizeof *tsc), per_thread = events / threads, msg = 1;
    for (uint64_t base = 0; base < per_thread; base += SLOTS) {
        for (uint32_t t = 0; t < threads; t++) {
            uint32_t n = (uint32_t)(per_thread - base < SLOTS ? per_thread - base : SLOTS);
            gen_block(slots, n, &tsc[t], &msg, (uint16_t)t);
            tg_events(&g, 5000 + t, (uint32_t)(base / SLOTS), slots, n);
        }
        tg_clock(&g, tsc[0], 1000000000 + tsc[0] / 3); /* 3 GHz */
        tg_meta_flush(&g);
    }
    tg_end(&g, per_thread * threads, 0, threads, 0);
    tg_meta_flush(&g);
    int err = tg_save(&g, path, g.len);
    printf("%s: %llu events, %u threads, %zu bytes\n", path,
           (unsigned long long)(per_thread * threads), threads, g.len);
    free(slots);
    free(tsc);
    tg_free(&g);
    return err < 0;
}

/* Stack companions: one whose event the recorder dropped is no event's stack, and not counted
 * in the summary's stacks (a SIGALRM storm in drop mode showed 5959 stacks for 5957 sends). */
static void test_orphan_stack(void)
{
    enum { STACK_KIND = 65 };
    struct tg g;
    tg_init(&g);
    tg_process(&g, 91, "/usr/bin/stacks");
    tg_clock(&g, 1000, 1000000);
    tg_thread(&g, TID0, 1000, "main");
    tg_name(&g, AT_NAME_EVENT, STACK_KIND, "stack", 5);
    tg_meta_flush(&g);
    struct at_event ev[6];
    for (int i = 0; i < 6; i++)
        ev[i] = (struct at_event){
            .tsc = 2000 + 10 * (uint64_t)i, .actor = 1, .peer = 2, .kind = AT_EV_SEND};
    ev[0] = (struct at_event){.tsc = 2000,
                              .actor = 1,
                              .msg = 7,
                              .name = AT_EV_SEND,
                              .kind = STACK_KIND}; /* the stack of ev[1] */
    ev[2] = (struct at_event){.tsc = 2020,
                              .actor = 1,
                              .msg = 8,
                              .name = AT_EV_SEND,
                              .kind = STACK_KIND}; /* its send was dropped */
    ev[3] = (struct at_event){.tsc = 2030,
                              .actor = 1,
                              .msg = 0,
                              .name = AT_EV_SEND,
                              .kind = STACK_KIND}; /* skipped: the stack of ev[4] */
    ev[5].actor = 3;                               /* a send without a companion */
    tg_events(&g, TID0, 0, ev, 6);
    tg_clock(&g, 2001000, 2000000);
    tg_lost(&g, TID0, AT_LOST_DROPPED, 1, 2020, 2020);
    tg_end(&g, 6, 1, 1, 1);
    tg_meta_flush(&g);
    const char *path = tmp_path("orphan.trace");
    tg_save(&g, path, g.len);
    int fd = open("/dev/null", O_WRONLY);
    struct result r = decode_files(&path, 1, &at__jsonl_ops, fd);
    close(fd);
    check(r.status == 0 && r.sum.events == 3, "orphan stack: the three sends are the events");
    check(r.sum.stacks == 2 && r.sum.stacks_skipped == 1,
          "orphan stack: stacks counts the sends given one (2, 1 skipped), not the orphan");
    tg_free(&g);
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--gen") == 0)
        return generate(argv[2], strtoull(argv[3], NULL, 10),
                        argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 4);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_clean();
    test_jsonl();
    test_cut_everywhere(1, "");
    test_cut_everywhere(2, "several blocks a frame");
    test_flip_everywhere(1, "");
    test_flip_everywhere(2, "several blocks a frame");
    test_garbage_between_frames();
    test_bad_contents();
    test_extensions();
    test_format1();
    test_recover_after_frame();
    test_refused();
    test_end_checks();
    test_two_files();
    test_command();
    test_orphan_stack();
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(seen);
    return failures ? 1 : 0;
}
