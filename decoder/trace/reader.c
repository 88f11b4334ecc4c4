/* Opening a trace file and building its index, in the order of docs/FORMAT.md: the file header
 * (section 2), then the frames (section 3); META payloads go to meta.c (section 5).
 *
 * The file is mapped (a pipe's bytes copied to a temporary file first) and scanned once from
 * the end of the file header. Nothing a frame header claims is believed before its checks
 * pass: magic, header_crc, header_size, the 16 MiB limits and, for EVENTS, count <= 131072 and
 * raw_size <= count * 64; then the payload must lie inside the file and match payload_crc, and
 * a block table (several blocks in one frame) must match its crc and the header's sums. Each
 * block of an accepted EVENTS frame joins its thread's frame list (its payload stays in the
 * file until the merge decodes it); an accepted META frame is decoded at once, so every name,
 * clock sample and loss is known before the first event is written out. What META records may
 * decode to in all is bounded by the size of the file (meta_budget), as the merge bounds events.
 *
 * A damaged frame is reported and the scan resumes at the next frame magic, searched from the
 * byte after the damaged frame's magic: past damage the frame's own sizes cannot be trusted.
 * A frame whose header passes its checks but whose payload runs past the end of the file is
 * the cut tail of the trace and ends the scan. Last, each thread's frames are sorted by seq
 * (blocks are written in the order they fill up, not in the order they were recorded), the
 * threads by tid, and the clock conversion is built from the samples. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at_codec.h"
#include "block.h"
#include "stacks.h"
#include "trace.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "headers are little-endian and copied as they are");

#define FILE_HEADER_SIZE 16
#define CRC_COVERED      52 /* header bytes under header_crc */

void at__trace_warn(const struct trace *t, const char *fmt, ...)
{
    if (!t->diag)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(t->diag, "tracedecode: %s: ", t->path);
    vfprintf(t->diag, fmt, ap);
    fputc('\n', t->diag);
    va_end(ap);
}

void at__trace_damage(struct trace *t, uint64_t offset, const char *why)
{
    t->damaged++;
    at__trace_warn(t, "damaged frame at offset %llu: %s; skipping", (unsigned long long)offset,
                   why);
}

/* ---- The file ---------------------------------------------------------------------------- */

static int map_file(struct trace *t, int fd, off_t size)
{
    if (size == 0) {
        t->data = (const uint8_t *)"";
        return 0;
    }
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    t->data = p;
    t->size = (size_t)size;
    t->mapped = true;
    return 0;
}

/* Reads up to len bytes, fewer only at the end of the input. Returns the count or -errno. */
static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t got = read(fd, buf + done, len - done);
        if (got == 0)
            break;
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        done += (size_t)got;
    }
    return (ssize_t)done;
}

int at__write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t done = write(fd, p, len);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            return -errno;
        p += done;
        len -= (size_t)done;
    }
    return 0;
}

/* Writes the `len` bytes of head, then the rest of fd, to out. Returns 0 or -errno. */
static int copy_rest(int fd, int out, const uint8_t *head, size_t len)
{
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    if (!buf)
        return -ENOMEM;
    int err = at__write_all(out, head, len);
    ssize_t got = 0;
    while (err == 0 && (got = read_full(fd, buf, CHUNK)) > 0)
        err = at__write_all(out, buf, (size_t)got);
    free(buf);
    return err < 0 ? err : (int)(got < 0 ? got : 0);
}

/* An unlinked file in $TMPDIR (or /tmp) to hold a pipe's bytes. Returns its fd or -errno. */
static int spool_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tracedecode-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    unlink(path);
    return fd;
}

/* A stream that is not a trace, or one cut inside its file header: its first bytes alone. */
static int keep_prefix(struct trace *t, const uint8_t *head, size_t len)
{
    t->data = (const uint8_t *)"";
    t->size = len;
    if (len == 0)
        return 0;
    if (!(t->prefix = malloc(len)))
        return -ENOMEM;
    memcpy(t->prefix, head, len);
    t->data = t->prefix;
    return 0;
}

/* Pipes and devices cannot be mapped. Their first bytes are read and checked for the magic
 * before anything else, so that a stream that is not a trace (/dev/zero) is refused at once;
 * a trace is then copied into an unlinked temporary file, which is mapped, so that its size
 * costs disk pages the kernel can drop rather than memory. */
static int spool(struct trace *t, int fd)
{
    uint8_t head[FILE_HEADER_SIZE];
    ssize_t got = read_full(fd, head, sizeof head);
    if (got < 0)
        return (int)got;
    size_t magic_len = (size_t)got < AT_FILE_MAGIC_LEN ? (size_t)got : AT_FILE_MAGIC_LEN;
    if ((size_t)got < sizeof head || memcmp(head, AT_FILE_MAGIC, magic_len) != 0)
        return keep_prefix(t, head, (size_t)got); /* check_file_header says what it is */
    int out = spool_file();
    if (out < 0) {
        at__trace_warn(t, "cannot create a temporary file for the input (%s)", strerror(-out));
        return out;
    }
    struct stat st;
    int err = copy_rest(fd, out, head, sizeof head);
    if (err == 0 && fstat(out, &st) < 0)
        err = -errno;
    if (err == 0)
        err = map_file(t, out, st.st_size);
    close(out);
    return err;
}

/* "-" is standard input. */
static int open_input(const char *path)
{
    int fd = strcmp(path, "-") == 0 ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
                                    : open(path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static int load_file(struct trace *t)
{
    int fd = open_input(t->path);
    if (fd < 0)
        return fd;
    struct stat st;
    int err = fstat(fd, &st) < 0 ? -errno : 0;
    if (err == 0) {
        t->dev = st.st_dev;
        t->ino = st.st_ino;
        err = S_ISREG(st.st_mode) ? map_file(t, fd, st.st_size) : spool(t, fd);
    }
    close(fd);
    return err;
}

/* ---- Section 2: the file header ------------------------------------------------------------ */

/* Sets *start to the offset of the first frame. A file too short to hold its header is a
 * trace cut early, as long as the bytes it has are the magic's. */
int at__trace_check_header(struct trace *t, size_t *start)
{
    size_t magic_len = t->size < AT_FILE_MAGIC_LEN ? t->size : AT_FILE_MAGIC_LEN;
    if (memcmp(t->data, AT_FILE_MAGIC, magic_len) != 0) {
        at__trace_warn(t, "not an actortrace file");
        return -EBADMSG;
    }
    if (t->size < FILE_HEADER_SIZE) {
        t->cut = true;
        at__trace_warn(t, "the file ends inside the file header: the trace is cut");
        *start = t->size;
        return 0;
    }
    struct at_file_header h;
    memcpy(&h, t->data, sizeof h);
    t->version_major = h.version_major;
    t->version_minor = h.version_minor;
    if (h.version_major < AT_FORMAT_MAJOR_OLDEST || h.version_major > AT_FORMAT_MAJOR) {
        at__trace_warn(t, "trace format version %u.%u is %s this tracedecode (%u.x to %u.x)",
                       h.version_major, h.version_minor,
                       h.version_major > AT_FORMAT_MAJOR ? "newer than" : "not supported by",
                       AT_FORMAT_MAJOR_OLDEST, AT_FORMAT_MAJOR);
        return -ENOTSUP;
    }
    if (h.header_size < FILE_HEADER_SIZE) {
        at__trace_warn(t, "not an actortrace file (file header size %u)", h.header_size);
        return -EBADMSG;
    }
    *start = h.header_size;
    if (*start > t->size) {
        t->cut = true;
        at__trace_warn(t, "the file ends inside the file header: the trace is cut");
        *start = t->size;
    }
    return 0;
}

/* ---- Section 3: frames ------------------------------------------------------------------- */

/* A fuzzing build (the libFuzzer convention) accepts any checksum, so that mutated inputs get
 * past them to the parsing behind. */
static int crc_matches(const uint8_t *p, size_t len, uint32_t crc)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    (void)p, (void)len, (void)crc;
    return 1;
#else
    return at_crc32c(0, p, len) == crc;
#endif
}

static const uint8_t frame_magic[4] = {0x41, 0x54, 0x52, 0x46};

/* The block table of an AT_FRAME_EVENTS_BLOCKS frame at p, whose header h passed its checks:
 * it fits in header_size, its crc matches, and its entries add up to the header's fields. */
static const char *check_table(const uint8_t *p, const struct at_frame_header *h)
{
    struct at_frame_blocks head;
    if (h->header_size < AT_FRAME_HEADER_SIZE + sizeof head)
        return "no block table";
    memcpy(&head, p + AT_FRAME_HEADER_SIZE, sizeof head);
    size_t size = head.count * sizeof(struct at_frame_block);
    if (head.count < 2 || head.count > AT_FRAME_MAX_BLOCKS ||
        h->header_size < AT_FRAME_HEADER_SIZE + sizeof head + size)
        return "a block table of a bad size";
    const uint8_t *entries = p + AT_FRAME_HEADER_SIZE + sizeof head;
    if (!crc_matches(entries, size, head.crc))
        return "block table checksum mismatch";
    uint64_t count = 0, torn = 0, raw = 0;
    for (uint32_t i = 0; i < head.count; i++) {
        struct at_frame_block b;
        memcpy(&b, entries + i * sizeof b, sizeof b);
        count += b.count;
        torn += b.torn;
        raw += b.raw_size;
    }
    if (count != h->count || torn != h->torn || raw != h->raw_size)
        return "a block table that does not add up to the header";
    return NULL;
}

/* The checks of FORMAT.md section 3, in an order that trusts no field before it is checked.
 * Returns NULL when the frame at pos passes, or what is wrong with it; *cut tells the cut tail
 * of the trace from damage. */
const char *at__frame_check(const struct trace *t, size_t pos, struct at_frame_header *h, bool *cut)
{
    const uint8_t *p = t->data + pos;
    size_t left = t->size - pos;
    *cut = false;
    if (left < AT_FRAME_HEADER_SIZE) {
        if (memcmp(p, frame_magic, left < 4 ? left : 4) != 0)
            return "no frame magic";
        *cut = true;
        return "the file ends inside its header";
    }
    memcpy(h, p, sizeof *h);
    if (h->magic != AT_FRAME_MAGIC)
        return "no frame magic";
    if (!crc_matches(p, CRC_COVERED, h->header_crc))
        return "header checksum mismatch";
    if (h->header_size < AT_FRAME_HEADER_SIZE)
        return "header_size below 56";
    if (h->payload_size > AT_FRAME_MAX_PAYLOAD || h->raw_size > AT_FRAME_MAX_PAYLOAD)
        return "payload larger than 16 MiB";
    bool events = h->type == AT_FRAME_EVENTS || h->type == AT_FRAME_EVENTS_BLOCKS;
    if (events && h->count > AT_FRAME_MAX_EVENTS)
        return "more than 131072 events";
    if (events && h->raw_size > at_events_encode_bound(h->count))
        return "raw_size larger than count * 64";
    if ((size_t)h->header_size + h->payload_size > left) {
        *cut = true;
        return "its payload runs past the end of the file";
    }
    if (!crc_matches(p + h->header_size, h->payload_size, h->payload_crc))
        return "payload checksum mismatch";
    return h->type == AT_FRAME_EVENTS_BLOCKS ? check_table(p, h) : NULL;
}

/* The offset of the next frame magic at or after from, or the file size. */
size_t at__frame_resync(const struct trace *t, size_t from)
{
    if (from >= t->size)
        return t->size;
    const uint8_t *found = memmem(t->data + from, t->size - from, frame_magic, 4);
    return found ? (size_t)(found - t->data) : t->size;
}

/* Adds block b of the frame at pos (header h) to its thread's list. */
static int index_block(struct trace *t, size_t pos, const struct at_frame_header *h,
                       const struct at_frame_block *b, uint32_t part_offset)
{
    struct thread *th = at__trace_thread(t, h->tid);
    struct frame_ref f = {
        .offset = pos,
        .first_tsc = b->first_tsc,
        .last_tsc = b->last_tsc,
        .seq = b->seq,
        .count = b->count,
        .payload_size = h->payload_size,
        .raw_size = h->raw_size,
        .part_offset = part_offset,
        .part_size = b->raw_size,
        .header_size = h->header_size,
        .encoding = h->encoding,
    };
    if (!th || at__thread_add_frame(th, &f) < 0)
        return -ENOMEM;
    th->torn += b->torn;
    t->torn += b->torn;
    return 0;
}

/* Each block of an EVENTS frame (at__frame_check checked its table) joins its thread's list. */
static int index_events(struct trace *t, size_t pos, const struct at_frame_header *h)
{
    struct at_frame_block one = {h->seq, h->count, h->torn, h->raw_size, h->first_tsc, h->last_tsc};
    if (h->type == AT_FRAME_EVENTS)
        return index_block(t, pos, h, &one, 0);
    struct at_frame_blocks head;
    const uint8_t *table = t->data + pos + AT_FRAME_HEADER_SIZE;
    memcpy(&head, table, sizeof head);
    uint32_t part_offset = 0;
    for (uint32_t i = 0; i < head.count; i++) {
        memcpy(&one, table + sizeof head + i * sizeof one, sizeof one);
        if (index_block(t, pos, h, &one, part_offset) < 0)
            return -ENOMEM;
        part_offset += one.raw_size;
    }
    return 0;
}

/* The decoded META bytes a trace may hold: what they load (names, clock samples, losses)
 * takes up to about ten times their size, and a frame of 16 MiB of records can compress to a
 * few hundred bytes. Real traces have a few kilobytes of records for megabytes of events. */
static uint64_t meta_budget(const struct trace *t)
{
    return (4ull << 20) + 16 * (uint64_t)t->size;
}

static int load_meta(struct trace *t, size_t pos, const struct at_frame_header *h,
                     struct unpacker *u)
{
    const uint8_t *raw;
    const char *why = "its records would pass the decoder's memory budget (4 MiB, and 16 "
                      "bytes for each byte of trace)";
    int err = t->meta_raw + h->raw_size > meta_budget(t) ? -E2BIG : 0;
    if (err == 0)
        err = at__unpack(u, t->data + pos + h->header_size, h->payload_size, h->raw_size,
                         h->encoding, &raw, &why);
    t->meta_raw += err == 0 ? h->raw_size : 0;
    if (err == 0) {
        err = at__meta_load(t, raw, h->raw_size, h->count);
        why = "malformed metadata record";
    }
    if (err == -ENOMEM)
        return err;
    if (err < 0)
        at__trace_damage(t, pos, why);
    return 0;
}

int at__frame_load(struct trace *t, size_t pos, const struct at_frame_header *h, struct unpacker *u)
{
    if (h->type == AT_FRAME_EVENTS || h->type == AT_FRAME_EVENTS_BLOCKS)
        return index_events(t, pos, h);
    if (h->type == AT_FRAME_META)
        return load_meta(t, pos, h, u);
    return 0; /* frame types of later versions are skipped */
}

static int scan(struct trace *t, size_t pos, struct unpacker *u)
{
    t->whole_end = t->size;
    while (pos < t->size) {
        struct at_frame_header h;
        bool cut;
        const char *why = at__frame_check(t, pos, &h, &cut);
        if (why && cut) {
            t->cut = true;
            t->whole_end = pos;
            at__trace_warn(t, "the frame at offset %zu is cut: %s", pos, why);
            return 0;
        }
        if (why) {
            at__trace_damage(t, pos, why);
            pos = at__frame_resync(t, pos + 1);
            continue;
        }
        int err = at__frame_load(t, pos, &h, u);
        if (err < 0)
            return err;
        pos += h.header_size + (size_t)h.payload_size;
    }
    return 0;
}

/* ---- After the scan ------------------------------------------------------------------------ */

static void warn_clock(const struct trace *t)
{
    if (t->nthreads == 0 && t->nlost == 0)
        return; /* nothing to convert */
    if (t->clock.n == 0)
        at__trace_warn(t, "no CLOCK record: ts_ns are raw timestamp counter values");
    else if (t->clock.n == 1)
        at__trace_warn(t, "only one CLOCK sample: assuming 1 tick = 1 ns");
    if (t->clock.adjusted)
        at__trace_warn(t, "%zu CLOCK samples were out of order and adjusted", t->clock.adjusted);
}

static int finish(struct trace *t)
{
    if (at__threads_sort(t) < 0)
        return -ENOMEM;
    int err = at__clock_init(&t->clock, t->samples, t->nsamples);
    if (err < 0)
        return err;
    free(t->samples);
    t->samples = NULL;
    t->nsamples = t->samples_cap = 0;
    warn_clock(t);
    if (!t->end.seen)
        at__trace_warn(t, "no END record: the recorder did not stop cleanly");
    return 0;
}

int at__trace_open(struct trace *t, const char *path, FILE *diag, struct unpacker *u)
{
    *t = (struct trace){.path = path, .diag = diag};
    size_t start = 0;
    int err = load_file(t);
    if (err < 0)
        at__trace_warn(t, "%s", strerror(-err));
    if (err == 0)
        err = at__trace_check_header(t, &start);
    if (err == 0)
        err = scan(t, start, u);
    if (err == 0)
        err = finish(t);
    if (err == -ENOMEM)
        at__trace_warn(t, "out of memory");
    if (err < 0)
        at__trace_close(t);
    return err;
}

void at__trace_close(struct trace *t)
{
    if (t->mapped)
        munmap((void *)t->data, t->size);
    free(t->prefix);
    at__threads_free(t);
    at__stacks_free(t->stacks);
    at__names_free(&t->names);
    at__clock_free(&t->clock);
    free(t->samples);
    free(t->lost);
    for (size_t i = 0; i < t->npatches; i++)
        free(t->patches[i].symbol);
    free(t->patches);
    at__process_free(&t->process);
    free(t->recovered);
    *t = (struct trace){0};
}
