/* The libFuzzer harness of tracedecode: each input is decoded as a trace file through every
 * output format, then cut in two traces that are merged through the filters, as the command
 * line would. Outputs that are meant to be JSON or protobuf are checked to be so, so that the
 * fuzzer finds malformed output as well as crashes, hangs, leaks and oversized allocations. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "at_codec.h"
#include "decode.h"
#include "jsoncheck.h"

enum check { CHECK_NONE, CHECK_JSON, CHECK_JSON_LINES, CHECK_PROTOBUF };

struct run {
    const struct output_ops *ops;
    bool json;     /* --json */
    unsigned jobs; /* 2: the helper thread decodes ahead (prefetch.c), as on a free core */
    enum check check;
};

static const struct run formats[] = {
    {&at__jsonl_ops, false, 2, CHECK_JSON_LINES},  {&at__stats_ops, false, 1, CHECK_NONE},
    {&at__stats_ops, true, 1, CHECK_JSON},         {&at__chrome_ops, false, 1, CHECK_JSON},
    {&at__perfetto_ops, false, 1, CHECK_PROTOBUF}, {&at__dot_ops, false, 1, CHECK_NONE},
    {&at__aether_ops, false, 1, CHECK_JSON_LINES},
};

/* The two parts of the input are merged as two processes' traces, through filters. */
static const struct run merged = {&at__jsonl_ops, false, 1, CHECK_JSON_LINES};
static const char *filter_events[] = {"send,recv,step_begin,step_end,kind_64"};
static const char *filter_actors[] = {"1,2,3,ping"};
static const struct filter_spec filter_spec = {
    .values = {[FILTER_EVENT] = filter_events, [FILTER_ACTOR] = filter_actors},
    .nvalues = {[FILTER_EVENT] = 1, [FILTER_ACTOR] = 1},
    .from = "+1us",
    .to = "+10s",
};

/* Files made once and rewritten for each input, opened by the decoder through /proc. */
enum { WHOLE, FIRST_PART, SECOND_PART, OUTPUT, NFILES };
static int fds[NFILES];
static char paths[NFILES][32];
static FILE *diag; /* /dev/null: the warnings are formatted, and cost no terminal output */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_decode: %s\n", what);
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < NFILES; i++) {
        if ((fds[i] = memfd_create("fuzz_decode", MFD_CLOEXEC)) < 0)
            die("memfd_create failed");
        snprintf(paths[i], sizeof paths[i], "/proc/self/fd/%d", fds[i]);
    }
    if (!(diag = fopen("/dev/null", "w")))
        die("cannot open /dev/null");
    return 0;
}

static void put_file(int fd, const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    if (ftruncate(fd, 0) < 0 || pwrite(fd, a, a_len, 0) != (ssize_t)a_len ||
        pwrite(fd, b, b_len, (off_t)a_len) != (ssize_t)b_len)
        die("cannot write a memfd");
}

/* ---- Checking the output ----------------------------------------------------------------- */

/* Whether p[0..end) is a sequence of protobuf fields ending exactly at end; the contents of
 * length-delimited fields are checked the same way, `depth` levels down. */
static bool protobuf_valid(const uint8_t *p, const uint8_t *end, int depth)
{
    while (p < end) {
        uint64_t key, v;
        if (at_varint_get(&p, end, &key) < 0 || key >> 3 == 0)
            return false;
        switch (key & 7) {
        case 0: /* varint */
            if (at_varint_get(&p, end, &v) < 0)
                return false;
            break;
        case 1: /* fixed64 */
            if (end - p < 8)
                return false;
            p += 8;
            break;
        case 2: /* length-delimited */
            if (at_varint_get(&p, end, &v) < 0 || v > (uint64_t)(end - p) ||
                (depth > 0 && !protobuf_valid(p, p + v, depth - 1)))
                return false;
            p += v;
            break;
        default:
            return false;
        }
    }
    return true;
}

static bool json_lines_valid(const char *s, size_t len)
{
    while (len > 0) {
        const char *nl = memchr(s, '\n', len);
        if (!nl || !json_valid(s, (size_t)(nl - s)))
            return false;
        len -= (size_t)(nl + 1 - s);
        s = nl + 1;
    }
    return true;
}

static bool output_valid(enum check check, const char *s, size_t len)
{
    const uint8_t *u = (const uint8_t *)s;
    switch (check) {
    case CHECK_JSON:
        return json_valid(s, len);
    case CHECK_JSON_LINES:
        return len > 0 && json_lines_valid(s, len);
    case CHECK_PROTOBUF:
        /* A Trace: its TracePackets, and theirs: TrackEvent, InternedData, TrackDescriptor,
         * whose own length-delimited fields are strings as often as messages. */
        return protobuf_valid(u, u + len, 2);
    default:
        return true;
    }
}

static void check_output(const struct run *r)
{
    off_t len = lseek(fds[OUTPUT], 0, SEEK_END);
    if (len <= 0)
        die("no output"); /* every format writes at least its header or summary */
    if (r->check == CHECK_NONE)
        return;
    void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fds[OUTPUT], 0);
    if (p == MAP_FAILED)
        die("cannot map the output");
    bool ok = output_valid(r->check, p, (size_t)len);
    munmap(p, (size_t)len);
    if (!ok) {
        fprintf(stderr, "fuzz_decode: --format %s%s wrote malformed output\n", r->ops->name,
                r->json ? " --json" : "");
        abort();
    }
}

/* ---- Decoding ---------------------------------------------------------------------------- */

/* One tracedecode run over paths[first..first + n) into the output file. */
static void decode(const struct run *r, size_t first, size_t n, const struct filter_spec *spec)
{
    struct decode d;
    struct filter f = {0};
    const char *names[NFILES];
    for (size_t i = 0; i < n; i++)
        names[i] = paths[first + i];
    int err = at__decode_open(&d, names, n, diag);
    if (err == -EBADMSG || err == -ENOTSUP || err == -EEXIST)
        return; /* not a trace, a version it does not read, or the same trace twice: refused */
    if (err < 0)
        die("at__decode_open failed");
    if (spec && at__filter_compile(&f, spec, d.traces, d.ntraces, diag) < 0)
        die("the filters did not compile");
    d.filter = spec ? &f : NULL;
    d.json = r->json;
    d.progress = true;
    d.jobs = r->jobs;
    struct out o;
    if (ftruncate(fds[OUTPUT], 0) < 0 || lseek(fds[OUTPUT], 0, SEEK_SET) < 0 ||
        at__out_init(&o, fds[OUTPUT]) < 0)
        die("cannot prepare the output");
    int status = at__decode_run(&d, r->ops, &o, NULL);
    if (at__out_flush(&o) < 0)
        die("cannot write the output");
    at__out_free(&o);
    at__decode_close(&d);
    at__filter_free(&f);
    if (status < 0 || status > 1)
        die("at__decode_run failed"); /* only a write error or -ENOMEM may fail it */
    check_output(r);
}

/* Where the second part starts: the first frame magic in the second half of the input, so
 * that both parts are mostly whole frames, as two processes' traces are. */
static size_t split_point(const uint8_t *data, size_t size)
{
    static const uint8_t magic[4] = {0x41, 0x54, 0x52, 0x46};
    size_t half = size / 2;
    const uint8_t *found = memmem(data + half, size - half, magic, sizeof magic);
    return found ? (size_t)(found - data) : half;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    put_file(fds[WHOLE], data, size, NULL, 0);
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        decode(&formats[i], WHOLE, 1, NULL);
    /* The second part gets the file header (its first 16 bytes) of the first. */
    size_t split = split_point(data, size), header = size < 16 ? size : 16;
    put_file(fds[FIRST_PART], data, split, NULL, 0);
    put_file(fds[SECOND_PART], data, header, data + split, size - split);
    decode(&merged, FIRST_PART, 2, &filter_spec);
    return 0;
}
