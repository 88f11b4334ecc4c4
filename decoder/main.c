/* tracedecode: the command line. Parses the options, opens the output, and runs one decoding
 * session (decode.c) over the trace files given. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at_format.h"
#include "clocks.h"
#include "decode.h"
#include "output.h"
#include "rings.h"
#include "watch.h"

static const struct output_ops *const formats[] = {
#define VIEW(name) &at__##name##_ops,
#include "views.def"
#undef VIEW
};

static const char usage[] =
    "Usage: tracedecode [-o OUT] [--format FORMAT] [--json] [FILTER...] [--names FILE]\n"
    "                   TRACE...\n"
    "\n"
    "Decodes actortrace trace files and writes their events in time order. Several TRACE\n"
    "files (the processes of one run) are merged on one CLOCK_MONOTONIC timeline; a trace\n"
    "given twice (the same file, or a copy of it) is refused. TRACE '-' is standard input.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT     write to OUT, created or truncated ('-': standard output, the\n"
    "                       default)\n"
    "  -f, --format FORMAT  jsonl (the default): one JSON object per event, described below\n"
    "                       perfetto: a Perfetto trace for ui.perfetto.dev: a track per\n"
    "                         actor, thread and core, arrows from each send to its step\n"
    "                       chrome: the same as Chrome trace JSON, for smaller traces\n"
    "                       stats: a report: counts, latency, mailbox depth, parked time,\n"
    "                         drops, top senders (sends with call stacks)\n"
    "                       dot: the actor graph (who sends what to whom) for Graphviz\n"
    "                       aether: the JSONL of Aether's own tracer (ae build --trace):\n"
    "                         its keys and event names, sends and steps only, then\n"
    "                         keys of our own (cpu; a step's type, type_name)\n"
    "      --json           with --format stats: write the report as one JSON object\n"
    "      --names FILE     names from FILE, lines \"ID NAME\" (message names), \"msg ID\n"
    "                       NAME\" or \"actor ID NAME\", or a JSON array of message names\n"
    "                       (element i names message id i); they replace the trace's own\n"
    "                       (Aether: the ids are its message types, from 0); a file none\n"
    "                       of whose names occur is warned about\n"
    "      --no-recover     do not read the ring file of a trace that did not end cleanly\n"
    "                       (by default the events a killed process had committed but not\n"
    "                       yet written are recovered from it, and marked \"recovered\")\n"
    "      --force-recover  read the ring file even when a process with the trace's pid and\n"
    "                       start time seems to be running\n"
    "      --recover        decode nothing: write the events, losses and clock samples the\n"
    "                       ring file of each TRACE holds into the TRACE itself, then remove\n"
    "                       the ring file (a ring file is never removed otherwise)\n"
    "      --rings [DIR]    decode nothing: list the ring files in DIR (ACTORTRACE_RING_DIR,\n"
    "                       or /dev/shm) with their process, running or gone, and trace\n"
    "      --remove         with --rings: recover each ring whose process is gone into its\n"
    "                       trace (as --recover), then remove it\n"
    "      --follow         read each TRACE as its process writes it, like tail -f, until\n"
    "                       the process ends (its END record, or it is gone) or SIGINT: jsonl\n"
    "                       as the frames come (each batch in time order; events of one\n"
    "                       thread in order), or stats: the last whole second per actor\n"
    "                       (received, sent, mailbox depth, core share, p99) once a second\n"
    "                       (--ring implied). A TRACE not there yet is waited for; the\n"
    "                       follower runs at nice 19, so that the program comes first\n"
    "      --ring           with --follow or --top: also the events still in the ring file\n"
    "                       of the running process, marked \"ring\":true (read only; each\n"
    "                       event once)\n"
    "      --top            the terminal view of actortrace top on TRACE... (--ring implied)\n"
    "      --poll MS        with --follow or --top: milliseconds between reads (default 100;\n"
    "                       0: read again at once)\n"
    "  -j, --jobs N         threads: 2 or more decodes blocks ahead on a second core (the\n"
    "                       default when a core is free); 1 decodes on one\n"
    "  -h, --help           show this text\n"
    "  -V, --version        show the trace format versions this tracedecode reads\n"
    "\n"
    "Filters, applied before any format; a filter's values (comma-separated or repeated)\n"
    "are alternatives, and an event must pass every filter given:\n"
    "  --actor A     events about actor A (a name or an id): its actor, or the sender of a\n"
    "                send or recv\n"
    "  --event KIND  events of that kind (send, step_begin, ..., a registered name, kind_N)\n"
    "  --msg M       events of message name M, or of message id M when M is a number\n"
    "                (name_N: message name id N)\n"
    "  --tid T       events recorded by thread T\n"
    "  --from T, --to T  events with T1 <= ts_ns <= T2; T in ts_ns nanoseconds, or\n"
    "                +DURATION after the first event (units ns, us, ms, s: +1.5ms)\n"
    "docs/DECODER.md explains each format and how sends are matched to their steps.\n"
    "\n"
    "JSONL: one object per event, in time order (a thread's events keep the order they were\n"
    "recorded in), then a summary object. Event fields, in this order:\n"
    "  ts_ns         CLOCK_MONOTONIC nanoseconds, from the trace's clock samples (of the\n"
    "                first file's host, for traces of several hosts: docs/DECODER.md)\n"
    "  core          the CPU the event was recorded on\n"
    "  pid           the recording process; only when several TRACE files are given\n"
    "  tid           the recording thread\n"
    "  event         spawn, exit, send, recv, step_begin, step_end, schedule, park, unpark,\n"
    "                yield, the name a shim registered for its own kind, or kind_N\n"
    "  actor         the actor the event is about (0: unknown); a send's receiver,\n"
    "                omitted when unknown\n"
    "  actor_name    its registered name; omitted when it has none\n"
    "  sender        send, send_failed and recv: the sending actor; omitted when unknown\n"
    "  peer          any other event: parent (spawn), worker (schedule), waker (unpark) or\n"
    "                the object waited on; omitted when unknown\n"
    "  sender_name, peer_name  their registered names; omitted when they have none\n"
    "  sender_remote, peer_remote  true: an actor of another node (CAF remoting), its\n"
    "                id there; it has no name here\n"
    "  actor_pid, sender_pid, peer_pid  in a trace of the BEAM (beam.smp), the pid of\n"
    "                actor, sender or peer as Erlang writes it: \"<0.85.0>\"\n"
    "  msg           message id; omitted when none\n"
    "  msg_name      the message's registered name, or name_N for an unnamed one; omitted\n"
    "                when the event has none\n"
    "  path          the registered name of the way the runtime went (local, remote, ...),\n"
    "                or path_N for an unnamed one; omitted when none\n"
    "  socket        a ZeroMQ socket's number in its process (send, recv, zmq_bind, ...)\n"
    "  actor_pid, sender_pid  with actor or sender: the process of a socket message's\n"
    "                other end, when it is in another TRACE file (docs/DECODER.md), with\n"
    "                actor_name or sender_name as that file names it\n"
    "  stack         the call stack it was recorded with (ACTORTRACE_STACKS), innermost\n"
    "                frame first: [\"func+0x1a (module)\",...]; null, with\n"
    "                \"stack_skipped\":true, when its capture was skipped; omitted when none\n"
    "  recovered     true for an event read from the ring file after a kill; omitted\n"
    "                otherwise\n"
    "Summary, the last line:\n"
    "  {\"summary\":true,\"events\":N,\"dropped\":N,\"threads\":N,\"truncated\":BOOL,\n"
    "   \"damaged_frames\":N,\"torn\":N,\"recovered\":N,\"stacks\":N,\"stacks_skipped\":N,\n"
    "   \"lost\":[...],\"files\":N}\n"
    "  events          event lines written\n"
    "  dropped         events the recorder lost, every reason: the sum of the lost\n"
    "                  counts, or the END record's total when that is larger\n"
    "  threads         threads seen, over all files\n"
    "  truncated       a file has no END record (the recorder did not stop cleanly) or ends\n"
    "                  inside a frame\n"
    "  damaged_frames  frames skipped because they failed a check\n"
    "  torn            event slots that were taken but never committed\n"
    "  recovered       events read from ring files (see --no-recover)\n"
    "  stacks          events given a call stack by a reference (the recorder's kind\n"
    "                  \"stack\", not counted in events); a reference whose event was\n"
    "                  dropped gives none and is not counted\n"
    "  stacks_skipped  those whose capture was skipped (docs/STACKS.md)\n"
    "  lost            one {\"tid\",\"reason\",\"count\",\"from_ns\",\"to_ns\"} per loss record\n"
    "                  (with \"pid\" when several files are given); reason is dropped,\n"
    "                  write_error or overwritten\n"
    "  files           TRACE files read\n"
    "  hosts           only for traces of several hosts (boots): per host {\"host\",\n"
    "                  \"boot_id\",\"files\",\"realtime_shift_ns\",\"realtime_spread_ns\",\n"
    "                  \"messages_in\",\"messages_out\",\"offset_ns\",\"offset_min_ns\",\n"
    "                  \"offset_max_ns\"}: how its clock was placed (docs/DECODER.md)\n"
    "Damage, truncation and losses are also reported on standard error.\n"
    "\n"
    "Exit status:\n"
    "  0  every trace was complete and undamaged\n"
    "  1  a trace was damaged or truncated; what could be decoded was written\n"
    "  2  usage or I/O error (the output's included), a file that is not a trace, a trace\n"
    "     given twice, or a trace format version newer than this tracedecode\n";

struct options {
    const char *output;
    const struct output_ops *format;
    const char *names;
    bool json;
    bool no_recover;
    bool force_recover, recover, rings, remove;
    unsigned jobs;
    struct filter_spec filter;
    bool follow, top;
    struct watch_options watch;
};

static const struct output_ops *find_format(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return formats[i];
    return NULL;
}

static int unknown_format(const char *name)
{
    fprintf(stderr, "tracedecode: unknown format '%s' (known:", name);
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        fprintf(stderr, "%s %s", i ? "," : "", formats[i]->name);
    fprintf(stderr, ")\n");
    return -EINVAL;
}

enum {
    OPT_JSON = 256,
    OPT_NO_RECOVER,
    OPT_NAMES,
    OPT_FORCE_RECOVER,
    OPT_RECOVER,
    OPT_RINGS,
    OPT_REMOVE,
    OPT_FOLLOW,
    OPT_RING,
    OPT_TOP,
    OPT_POLL,
    OPT_FROM,
    OPT_TO,
    OPT_FILTER
};

/* Two threads when a core is to spare (online cores minus the load average): the helper only
 * pays when it runs beside the merge, not in turn with it. More would not help: the merge
 * itself is serial. */
static unsigned default_jobs(void)
{
    double load;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1 && getloadavg(&load, 1) == 1 && (double)cores - load >= 1.0 ? 2 : 1;
}

static int parse_jobs(const char *s, unsigned *jobs)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (end == s || *end || n < 1 || n > 1024) {
        fprintf(stderr, "tracedecode: --jobs: '%s' is not a number from 1 to 1024\n", s);
        return -EINVAL;
    }
    *jobs = (unsigned)n;
    return 0;
}

/* The options that add to a filter: their codes are OPT_FILTER + enum filter_option. */
static int parse_filter(struct options *opt, int c)
{
    if (c == OPT_FROM || c == OPT_TO) {
        *(c == OPT_FROM ? &opt->filter.from : &opt->filter.to) = optarg;
        return 0;
    }
    if (at__filter_add(&opt->filter, (enum filter_option)(c - OPT_FILTER), optarg) == 0)
        return 0;
    fputs("tracedecode: out of memory\n", stderr);
    return -ENOMEM;
}

/* The options about ring files. */
static void parse_rings(struct options *opt, int c)
{
    opt->force_recover |= c == OPT_FORCE_RECOVER;
    opt->recover |= c == OPT_RECOVER;
    opt->rings |= c == OPT_RINGS;
    opt->remove |= c == OPT_REMOVE;
}

/* The options of --follow and --top. Returns 0 or -EINVAL. */
static int parse_watch(struct options *opt, int c)
{
    opt->follow |= c == OPT_FOLLOW;
    opt->top |= c == OPT_TOP;
    opt->watch.ring |= c == OPT_RING || c == OPT_TOP;
    if (c != OPT_POLL)
        return 0;
    char *end;
    long ms = strtol(optarg, &end, 10);
    if (end == optarg || *end || ms < 0 || ms > 60000) {
        fprintf(stderr, "tracedecode: --poll: '%s' is not a number from 0 to 60000\n", optarg);
        return -EINVAL;
    }
    opt->watch.poll_ms = (unsigned)ms;
    return 0;
}

/* Returns 0 to decode, 1 when --help or --version was answered, -EINVAL on a usage error. */
static int parse(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"json", no_argument, NULL, OPT_JSON},
        {"names", required_argument, NULL, OPT_NAMES},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"actor", required_argument, NULL, OPT_FILTER + FILTER_ACTOR},
        {"event", required_argument, NULL, OPT_FILTER + FILTER_EVENT},
        {"msg", required_argument, NULL, OPT_FILTER + FILTER_MSG},
        {"tid", required_argument, NULL, OPT_FILTER + FILTER_TID},
        {"jobs", required_argument, NULL, 'j'},
        {"no-recover", no_argument, NULL, OPT_NO_RECOVER},
        {"force-recover", no_argument, NULL, OPT_FORCE_RECOVER},
        {"recover", no_argument, NULL, OPT_RECOVER},
        {"rings", no_argument, NULL, OPT_RINGS},
        {"remove", no_argument, NULL, OPT_REMOVE},
        {"follow", no_argument, NULL, OPT_FOLLOW},
        {"ring", no_argument, NULL, OPT_RING},
        {"top", no_argument, NULL, OPT_TOP},
        {"poll", required_argument, NULL, OPT_POLL},
        {NULL, 0, NULL, 0},
    };
    *opt = (struct options){
        .output = "-", .format = formats[0], .jobs = default_jobs(), .watch.poll_ms = 100};
    int c;
    while ((c = getopt_long(argc, argv, "o:f:j:hV", longopts, NULL)) != -1) {
        if (c == 'o') {
            opt->output = optarg;
        } else if (c == 'j') {
            if (parse_jobs(optarg, &opt->jobs) < 0)
                return -EINVAL;
        } else if (c == 'f' && (opt->format = find_format(optarg)) == NULL) {
            return unknown_format(optarg);
        } else if (c == OPT_JSON) {
            opt->json = true;
        } else if (c == OPT_NO_RECOVER) {
            opt->no_recover = true;
        } else if (c >= OPT_FORCE_RECOVER && c <= OPT_REMOVE) {
            parse_rings(opt, c);
        } else if (c >= OPT_FOLLOW && c <= OPT_POLL) {
            if (parse_watch(opt, c) < 0)
                return -EINVAL;
        } else if (c == OPT_NAMES) {
            opt->names = optarg;
        } else if (c >= OPT_FROM) {
            if (parse_filter(opt, c) < 0)
                return -ENOMEM;
        } else if (c == 'h') {
            fputs(usage, stdout);
            return 1;
        } else if (c == 'V') {
            printf("tracedecode: reads trace formats %u.x to %u.x\n", AT_FORMAT_MAJOR_OLDEST,
                   AT_FORMAT_MAJOR);
            return 1;
        } else if (c != 'f') {
            return -EINVAL;
        }
    }
    if (optind == argc && !opt->rings) {
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

/* Recovers what ring files hold, places several hosts' traces on one timeline, then applies
 * --names and the filters to the open traces. Returns 0 or a negative errno. */
static int prepare(struct decode *d, const struct options *opt, struct filter *f)
{
    int err = 0;
    for (size_t i = 0; i < d->ntraces && err == 0 && !opt->no_recover; i++)
        err = at__trace_recover(&d->traces[i], opt->force_recover);
    if (err == 0)
        err = at__clocks_place(d);
    if (err == 0 && opt->names)
        err = at__names_file_apply(d, opt->names);
    if (err == 0 && at__filter_given(&opt->filter)) {
        err = at__filter_compile(f, &opt->filter, d->traces, d->ntraces, stderr);
        d->filter = err == 0 ? f : NULL;
    }
    d->json = opt->json;
    d->progress = true;
    d->jobs = opt->jobs;
    return err;
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

/* 1 when `output` names one of the traces --follow reads (the same file, or the same name of
 * one not made yet): truncating it would destroy the trace it follows. */
static int follows(const char *output, const char *const *paths, size_t n)
{
    struct stat out, in;
    int exists = stat(output, &out) == 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(output, paths[i]) == 0 || (exists && stat(paths[i], &in) == 0 &&
                                              in.st_dev == out.st_dev && in.st_ino == out.st_ino))
            return 1;
    return 0;
}

/* --follow and --top: the formats that stream, without filters or names. */
static int watch(struct options *opt, const char *const *paths, size_t n)
{
    opt->watch.paths = paths;
    opt->watch.n = n;
    for (size_t i = 0; i < n; i++)
        if (strcmp(paths[i], "-") == 0) {
            fputs("tracedecode: --follow and --top read trace files, not standard input\n", stderr);
            return 2;
        }
    if (opt->top)
        return at__top_run(&opt->watch);
    if ((opt->format != &at__jsonl_ops && opt->format != &at__stats_ops) || opt->json ||
        opt->names || at__filter_given(&opt->filter)) {
        fputs("tracedecode: --follow writes jsonl or the stats text, without filters or "
              "--names\n",
              stderr);
        return 2;
    }
    opt->watch.format = opt->format == &at__jsonl_ops ? opt->format : NULL;
    opt->watch.ring |= !opt->watch.format; /* the seconds are whole only with the ring's events */
    if (strcmp(opt->output, "-") != 0 && follows(opt->output, paths, n)) {
        fprintf(stderr, "tracedecode: %s: is one of the trace files; not overwriting it\n",
                opt->output);
        return 2;
    }
    int fd = strcmp(opt->output, "-") == 0
                 ? STDOUT_FILENO
                 : open(opt->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "tracedecode: %s: %s\n", opt->output, strerror(errno));
        return 2;
    }
    int status = at__watch_follow(&opt->watch, fd);
    if (fd != STDOUT_FILENO)
        close(fd);
    return status;
}

int main(int argc, char **argv)
{
    struct options opt;
    int parsed = parse(argc, argv, &opt);
    if (parsed != 0) {
        if (parsed < 0)
            fputs("Try 'tracedecode --help'.\n", stderr);
        at__filter_spec_free(&opt.filter);
        return parsed < 0 ? 2 : 0;
    }
    const char *const *paths = (const char *const *)argv + optind;
    if (opt.follow || opt.top) {
        int status = watch(&opt, paths, (size_t)(argc - optind));
        at__filter_spec_free(&opt.filter);
        return status;
    }
    if (opt.rings || opt.recover) {
        const char *dir = getenv("ACTORTRACE_RING_DIR");
        at__filter_spec_free(&opt.filter);
        if (opt.recover)
            return at__recover_files(paths, (size_t)(argc - optind), opt.force_recover);
        return at__rings_list(optind < argc ? paths[0]
                              : dir && *dir ? dir
                                            : "/dev/shm",
                              opt.remove);
    }
    struct decode d;
    struct filter f = {0};
    int status = 2;
    if (at__decode_open(&d, paths, (size_t)(argc - optind), stderr) == 0) {
        int fd = prepare(&d, &opt, &f) == 0 ? open_output(&d, opt.output) : -1;
        status = fd < 0 ? 2 : run(&d, &opt, fd);
        at__decode_close(&d);
    }
    at__filter_free(&f);
    at__filter_spec_free(&opt.filter);
    return status;
}
