/* actortrace: the command users type. Dispatches to its subcommands, and finds the two files
 * it runs: the library to preload and tracedecode, beside the command in the build tree or
 * under the PREFIX it was installed to. report, view and decode run tracedecode. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actortrace.h"
#include "cli.h"

static const char usage[] =
    "Usage: actortrace COMMAND [ARG...]\n"
    "\n"
    "Traces programs written on an actor runtime (actortrace(1), actortrace(7)).\n"
    "\n"
    "Commands:\n"
    "  record [OPTION...] [--] PROG [ARG...]\n"
    "                         run PROG traced; say where the trace went and what it holds\n"
    "  report [OPTION...] TRACE...\n"
    "                         the statistics of a trace (tracedecode --format stats)\n"
    "  view [-o OUT] TRACE... write the Perfetto file beside the trace, to open in\n"
    "                         ui.perfetto.dev\n"
    "  decode [OPTION...] TRACE...\n"
    "                         tracedecode with these options: JSONL, or any of its formats\n"
    "  list [PROG]            the runtimes actortrace knows, and which of them PROG links\n"
    "  top [PID | TRACE...]   watch a running traced program: per actor and per second,\n"
    "                         messages, mailbox depth, handler time (a terminal view)\n"
    "  help [COMMAND]         this text, or a command's (the same as COMMAND --help)\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this text\n"
    "  -V, --version  show the version\n"
    "\n"
    "Environment:\n"
    "  ACTORTRACE_LIB  the library record preloads and list inspects, instead of\n"
    "                  libactortrace.so beside this command or in ../lib/actortrace from it\n"
    "\n"
    "Exit status: record exits with the program's status (see actortrace record --help);\n"
    "report, view and decode with tracedecode's (0 complete, 1 damaged or cut, 2 error);\n"
    "2 for a usage error.\n";

static const char report_usage[] =
    "Usage: actortrace report [OPTION...] TRACE...\n"
    "\n"
    "Prints the statistics of the traces: counts by kind, latency from send to handler\n"
    "(p50/p90/p99), mailbox depth, parked time, drops. Runs tracedecode --format stats\n"
    "with the OPTIONs given: --json for the report as JSON, the filters (--actor, --event,\n"
    "--msg, --tid, --from, --to), --names FILE, -o OUT. Several TRACE files are merged.\n"
    "\n"
    "Exit status: 0 complete; 1 a trace was damaged or cut (what could be read was\n"
    "reported); 2 usage or I/O error, or not a trace.\n";

static const char view_usage[] =
    "Usage: actortrace view [-o OUT] TRACE...\n"
    "\n"
    "Writes the Perfetto trace of TRACE beside it (run.trace: run.pftrace; OUT when given)\n"
    "and says how to open it: a track per actor, thread and core, an arrow from each send\n"
    "to the step that handled it. Several TRACE files (the processes of one run) make one\n"
    "Perfetto file, named after the first. For filters, use actortrace decode -f perfetto.\n"
    "\n"
    "Exit status: 0 complete; 1 a trace was damaged or cut (what could be read was\n"
    "written); 2 usage or I/O error, or not a trace.\n";

static const char decode_usage[] =
    "Usage: actortrace decode [OPTION...] TRACE...\n"
    "\n"
    "Runs tracedecode with the same arguments: JSONL on standard output by default; every\n"
    "option of tracedecode(1), which follows.\n"
    "\n";

static char self_dir[PATH_MAX];

void at__cli_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("actortrace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static bool is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

/* The directory of the running command, resolved through links, so that an installed command
 * called through a symbolic link still finds PREFIX/lib. */
static int find_self(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) {
        int err = errno;
        at__cli_say("cannot read /proc/self/exe: %s", strerror(err));
        return -err;
    }
    path[n] = '\0';
    *strrchr(path, '/') = '\0';
    snprintf(self_dir, sizeof self_dir, "%s", path[0] ? path : "/");
    return 0;
}

static const char *given_library(const char *given, const char *source)
{
    static char path[PATH_MAX];
    if (realpath(given, path) && access(path, R_OK) == 0)
        return path;
    at__cli_say("%s: %s (the library to preload, from %s)", given, strerror(errno), source);
    return NULL;
}

const char *at__cli_library(const char *option)
{
    static const char *const places[] = {"libactortrace.so", "../lib/actortrace/libactortrace.so"};
    static char path[PATH_MAX];
    const char *env = getenv("ACTORTRACE_LIB");
    if (option)
        return given_library(option, "--preload");
    if (env && env[0])
        return given_library(env, "ACTORTRACE_LIB");
    for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
        char candidate[PATH_MAX + 64];
        snprintf(candidate, sizeof candidate, "%s/%s", self_dir, places[i]);
        if (realpath(candidate, path) && access(path, R_OK) == 0)
            return path;
    }
    at__cli_say("cannot find libactortrace.so in %s or %s/../lib/actortrace; name it with "
                "--preload LIB or ACTORTRACE_LIB",
                self_dir, self_dir);
    return NULL;
}

static bool is_program(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int at__cli_find_program(const char *prog, char *out, size_t cap)
{
    const char *path = getenv("PATH");
    int err = -ENOENT;
    if (strchr(prog, '/')) {
        snprintf(out, cap, "%s", prog);
        struct stat st;
        if (stat(prog, &st) < 0)
            return -errno;
        return S_ISDIR(st.st_mode) ? -EISDIR : 0;
    }
    for (const char *dir = path ? path : "/bin:/usr/bin";; dir++) {
        int len = (int)strcspn(dir, ":"); /* an empty entry is the current directory */
        snprintf(out, cap, "%.*s%s%s", len, dir, len ? "/" : "", prog);
        if (is_program(out))
            return 0;
        if (access(out, F_OK) == 0)
            err = -EACCES;
        dir += len;
        if (*dir == '\0')
            break;
    }
    return err;
}

/* tracedecode's path, then FRONT and REST (each NULL-ended). */
static char **decode_argv(const char *const front[], char *const rest[])
{
    static char path[PATH_MAX + 16];
    size_t n_front = 0, n_rest = 0;
    while (front[n_front])
        n_front++;
    while (rest[n_rest])
        n_rest++;
    char **full = calloc(1 + n_front + n_rest + 1, sizeof *full);
    if (!full)
        return NULL;
    snprintf(path, sizeof path, "%s/tracedecode", self_dir);
    full[0] = path;
    memcpy(full + 1, front, n_front * sizeof *front);
    memcpy(full + 1 + n_front, rest, n_rest * sizeof *rest);
    return full;
}

/* Runs tracedecode FRONT... REST... in this process; returns only when it cannot. */
static void exec_decode(const char *const front[], char *const rest[])
{
    char **full = decode_argv(front, rest);
    if (full)
        execv(full[0], full);
    at__cli_say("cannot run %s/tracedecode: %s", self_dir, strerror(errno));
}

/* The child's stdout into *OUT (up to CAP - 1 bytes, the rest read and left), NUL-ended. */
static void read_all(int fd, char *out, size_t cap)
{
    size_t len = 0;
    char sink[4096];
    for (;;) {
        char *to = len + 1 < cap ? out + len : sink;
        size_t room = len + 1 < cap ? cap - 1 - len : sizeof sink;
        ssize_t n = read(fd, to, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (to == out + len)
            len += (size_t)n;
    }
    out[len] = '\0';
}

static int wait_status(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return EXIT_USAGE;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status) == 127 ? EXIT_USAGE : WEXITSTATUS(status);
}

int at__cli_decode(const char *const front[], char *const rest[], char *out, size_t cap)
{
    int pipefd[2];
    if (out && pipe(pipefd) < 0)
        return EXIT_USAGE;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (out && dup2(pipefd[1], STDOUT_FILENO) < 0)
            _exit(127);
        exec_decode(front, rest);
        _exit(127);
    }
    if (out) {
        close(pipefd[1]);
        if (pid > 0)
            read_all(pipefd[0], out, cap);
        close(pipefd[0]);
    }
    return pid < 0 ? EXIT_USAGE : wait_status(pid);
}

static int report_main(int argc, char **argv)
{
    static const char *const front[] = {"--format", "stats", NULL};
    if (argc < 2 || is_help(argv[1])) {
        fputs(report_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    exec_decode(front, argv + 1);
    return EXIT_USAGE;
}

static int decode_main(int argc, char **argv)
{
    static const char *const none[] = {NULL};
    if (argc >= 2 && is_help(argv[1])) {
        fputs(decode_usage, stdout);
        fflush(stdout);
    }
    exec_decode(none, argv + 1);
    return EXIT_USAGE;
}

/* The Perfetto file beside TRACE: its name without ".trace", then ".pftrace". */
static char *perfetto_name(const char *trace)
{
    size_t len = strlen(trace);
    if (len > 6 && strcmp(trace + len - 6, ".trace") == 0)
        len -= 6;
    char *name = malloc(len + sizeof ".pftrace");
    if (name)
        sprintf(name, "%.*s.pftrace", (int)len, trace);
    return name;
}

static int view_main(int argc, char **argv)
{
    const char *out = NULL;
    int first = 1;
    if (argc >= 2 && is_help(argv[1])) {
        fputs(view_usage, stdout);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "-o") == 0) {
        out = argv[2];
        first = 3;
    }
    if (first >= argc || argv[first][0] == '-') {
        fputs(view_usage, stderr);
        return EXIT_USAGE;
    }
    char *name = out ? strdup(out) : perfetto_name(argv[first]);
    const char *front[] = {"--format", "perfetto", "-o", name, "--", NULL};
    int status = name ? at__cli_decode(front, argv + first, NULL, 0) : EXIT_USAGE;
    if (status <= 1)
        printf("actortrace: wrote %s; open it at https://ui.perfetto.dev (\"Open trace file\", "
               "or drag it onto the page)\n",
               name);
    free(name);
    return status;
}

static const struct command {
    const char *name;
    int (*main)(int argc, char **argv); /* argv[0] is the command's name */
} commands[] = {
    {"record", at__record_main}, {"report", report_main}, {"view", view_main},
    {"decode", decode_main},     {"list", at__list_main}, {"top", at__top_main},
};

static int run(const char *name, int argc, char **argv)
{
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].main(argc, argv);
    at__cli_say("unknown command '%s' (record, report, view, decode, list, top; see "
                "actortrace --help)",
                name);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (find_self() < 0)
        return EXIT_USAGE;
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    if (is_help(argv[1]) || (strcmp(argv[1], "help") == 0 && argc == 2)) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("actortrace %s\n", ACTORTRACE_VERSION_STRING);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0) {
        char *help[] = {argv[2], "--help", NULL};
        return run(argv[2], 2, help);
    }
    return run(argv[1], argc - 1, argv + 1);
}
