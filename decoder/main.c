/* tracedecode: the command line. Parses the options, opens the output, and runs one decoding
 * session (decode.c) over the trace files given. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at_format.h"
#include "decode.h"
#include "output.h"

static const struct output_ops *const formats[] = {&at__jsonl_ops};

static const char usage[] =
    "Usage: tracedecode [-o OUT] [--format FORMAT] TRACE...\n"
    "\n"
    "Decodes actortrace trace files and writes their events in time order. Several TRACE\n"
    "files (the processes of one run) are merged on one CLOCK_MONOTONIC timeline.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT     write to OUT, created or truncated ('-': standard output, the\n"
    "                       default)\n"
    "  -f, --format FORMAT  output format: jsonl (the default)\n"
    "  -h, --help           show this text\n"
    "  -V, --version        show the trace format versions this tracedecode reads\n"
    "\n"
    "JSONL: one object per event, in time order (a thread's events keep the order they were\n"
    "recorded in), then a summary object. Event fields, in this order:\n"
    "  ts_ns         CLOCK_MONOTONIC nanoseconds, from the trace's clock samples\n"
    "  core          the CPU the event was recorded on\n"
    "  pid           the recording process; only when several TRACE files are given\n"
    "  tid           the recording thread\n"
    "  event         spawn, exit, send, recv, step_begin, step_end, schedule, park, unpark,\n"
    "                yield, the name a shim registered for its own kind, or kind_N\n"
    "  actor         the actor the event is about (0: unknown)\n"
    "  actor_name    its registered name; omitted when it has none\n"
    "  sender        send and recv: the sending actor; omitted when unknown\n"
    "  peer          any other event: parent (spawn), worker (schedule), waker (unpark) or\n"
    "                the object waited on; omitted when unknown\n"
    "  sender_name, peer_name  their registered names; omitted when they have none\n"
    "  msg           message id; omitted when none\n"
    "  msg_name      the message's registered name, or name_N for an unnamed one; omitted\n"
    "                when the event has none\n"
    "  path          the registered name of the way the runtime went (local, remote, ...),\n"
    "                or path_N for an unnamed one; omitted when none\n"
    "Summary, the last line:\n"
    "  {\"summary\":true,\"events\":N,\"dropped\":N,\"threads\":N,\"truncated\":BOOL,\n"
    "   \"damaged_frames\":N,\"torn\":N,\"lost\":[...],\"files\":N}\n"
    "  events          event lines written\n"
    "  dropped         events the recorder lost, every reason: the sum of the lost\n"
    "                  counts, or the END record's total when that is larger\n"
    "  threads         threads seen, over all files\n"
    "  truncated       a file has no END record (the recorder did not stop cleanly) or ends\n"
    "                  inside a frame\n"
    "  damaged_frames  frames skipped because they failed a check\n"
    "  torn            event slots that were taken but never committed\n"
    "  lost            one {\"tid\",\"reason\",\"count\",\"from_ns\",\"to_ns\"} per loss record\n"
    "                  (with \"pid\" when several files are given); reason is dropped,\n"
    "                  write_error or overwritten\n"
    "  files           TRACE files read\n"
    "Damage, truncation and losses are also reported on standard error.\n"
    "\n"
    "Exit status:\n"
    "  0  every trace was complete and undamaged\n"
    "  1  a trace was damaged or truncated; what could be decoded was written\n"
    "  2  usage or I/O error, a file that is not a trace, or a trace format version newer\n"
    "     than this tracedecode\n";

struct options {
    const char *output;
    const struct output_ops *format;
};

static const struct output_ops *find_format(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return formats[i];
    return NULL;
}

/* Returns 0 to decode, 1 when --help or --version was answered, -EINVAL on a usage error. */
static int parse(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},         {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    *opt = (struct options){.output = "-", .format = formats[0]};
    int c;
    while ((c = getopt_long(argc, argv, "o:f:hV", longopts, NULL)) != -1) {
        if (c == 'o') {
            opt->output = optarg;
        } else if (c == 'f' && (opt->format = find_format(optarg)) == NULL) {
            fprintf(stderr, "tracedecode: unknown format '%s' (known: jsonl)\n", optarg);
            return -EINVAL;
        } else if (c == 'h') {
            fputs(usage, stdout);
            return 1;
        } else if (c == 'V') {
            printf("tracedecode: reads trace format %u.x\n", AT_FORMAT_MAJOR);
            return 1;
        } else if (c != 'f') {
            return -EINVAL;
        }
    }
    if (optind == argc) {
        fputs("tracedecode: no trace file given\n", stderr);
        return -EINVAL;
    }
    return 0;
}

/* Truncating a trace that is mapped would pull the bytes from under the decoder. */
static int is_input(const struct decode *d, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    for (size_t i = 0; i < d->ntraces; i++)
        if (d->traces[i].dev == st.st_dev && d->traces[i].ino == st.st_ino)
            return 1;
    return 0;
}

static int open_output(const struct decode *d, const char *path)
{
    if (strcmp(path, "-") == 0)
        return STDOUT_FILENO;
    if (is_input(d, path)) {
        fprintf(stderr, "tracedecode: %s: is one of the trace files; not overwriting it\n", path);
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        fprintf(stderr, "tracedecode: %s: %s\n", path, strerror(errno));
    return fd;
}

/* Decodes into the open output; returns the exit status. */
static int run(struct decode *d, const struct options *opt, int fd)
{
    struct out o;
    if (at__out_init(&o, fd) < 0) {
        fputs("tracedecode: out of memory\n", stderr);
        return 2;
    }
    int status = at__decode_run(d, opt->format, &o, NULL);
    int err = at__out_flush(&o);
    at__out_free(&o);
    if (fd != STDOUT_FILENO && close(fd) < 0 && err == 0)
        err = -errno;
    if (status < 0 && status != err)
        fprintf(stderr, "tracedecode: %s\n", strerror(-status));
    if (err < 0)
        fprintf(stderr, "tracedecode: %s: %s\n", strcmp(opt->output, "-") ? opt->output : "stdout",
                strerror(-err));
    return status < 0 || err < 0 ? 2 : status;
}

int main(int argc, char **argv)
{
    struct options opt;
    int parsed = parse(argc, argv, &opt);
    if (parsed != 0) {
        if (parsed < 0)
            fputs("Try 'tracedecode --help'.\n", stderr);
        return parsed < 0 ? 2 : 0;
    }
    struct decode d;
    const char *const *paths = (const char *const *)argv + optind;
    if (at__decode_open(&d, paths, (size_t)(argc - optind), stderr) < 0)
        return 2;
    int fd = open_output(&d, opt.output);
    int status = fd < 0 ? 2 : run(&d, &opt, fd);
    at__decode_close(&d);
    return status;
}
