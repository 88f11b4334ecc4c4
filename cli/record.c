/* actortrace record: runs a program with the library preloaded and the settings its options
 * give, passes on its exit status, and says where the trace went and what it holds. What
 * LD_PRELOAD cannot enter (a static program, one that changes user) is refused before it runs,
 * since the alternative is a run that looks traced and is not. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "at_events.h"
#include "cli.h"

static const char record_usage[] =
    "Usage: actortrace record [OPTION...] [--] PROG [ARG...]\n"
    "\n"
    "Runs PROG with libactortrace.so preloaded, so that the calls it makes into the actor\n"
    "runtimes actortrace knows are recorded, and when it ends, says on standard error where\n"
    "the trace went and how many events it holds and how many were dropped, one line for\n"
    "each file the run wrote (a forked child's, an exec'd image's). Each option\n"
    "sets one of the recorder's settings (actortrace(7)); a setting without an option given\n"
    "comes from its ACTORTRACE_* environment variable, or its default.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE   the trace file (ACTORTRACE_OUT; default actortrace-%p.trace):\n"
    "                      %p is the pid, %% a %; without %p, FILE must not exist yet\n"
    "      --mode MODE     what a thread does when the writer has fallen behind: drop\n"
    "                      (the default: wait 100 ms at most, then count what is lost),\n"
    "                      block (wait: lose nothing)\n"
    "                      or overwrite (keep the newest events in memory, write them at\n"
    "                      the end or on SIGUSR2) (ACTORTRACE_MODE)\n"
    "      --buffer MB     memory for events not yet written, 1 to 65536 (default 32;\n"
    "                      ACTORTRACE_BUFFER_MB)\n"
    "      --block KB      the size of one thread's block, 4 to 4096 (default 64;\n"
    "                      ACTORTRACE_BLOCK_KB)\n"
    "      --ring-dir DIR  the directory of the buffer's file while PROG runs (default\n"
    "                      /dev/shm; ACTORTRACE_RING_DIR)\n"
    "      --zstd-level N  the compression level, 1 to 19 (default 1; ACTORTRACE_ZSTD_LEVEL)\n"
    "      --writer-nice N run the writer thread N nice levels below the program, 0 to 19\n"
    "                      (default 0; ACTORTRACE_WRITER_NICE)\n"
    "      --glibc         also record waits and wake-ups in glibc's condition variables,\n"
    "                      semaphores and futexes (ACTORTRACE_GLIBC=1)\n"
    "      --no-patch      trace only calls through the PLT: no entry patching\n"
    "                      (ACTORTRACE_PATCH=0)\n"
    "      --stacks KINDS  record the call stack with each event of these kinds,\n"
    "                      comma-separated (send,spawn), or all (ACTORTRACE_STACKS)\n"
    "      --stack-depth N frames kept per stack, 1 to 32 (default 16;\n"
    "                      ACTORTRACE_STACK_DEPTH)\n"
    "      --stack-every N capture a stack on 1 in N events of those kinds, 1 to 1073741824\n"
    "                      (default 1; ACTORTRACE_STACK_EVERY)\n"
    "      --preload LIB   preload LIB instead of the library found beside this command or\n"
    "                      in ../lib/actortrace (the same as ACTORTRACE_LIB=LIB)\n"
    "      --shim LIB      also preload LIB, after the library: a shim that resolves its real\n"
    "                      functions itself, as shimgen's libshim-NAME.so do (a shim calling\n"
    "                      at_resolve goes first, in LD_PRELOAD); up to 8\n"
    "      --top           watch PROG while it runs (actortrace top) on this terminal; PROG's\n"
    "                      standard output and error go to its trace's name with .out\n"
    "                      added, its standard input is /dev/null; q ends the view\n"
    "  -h, --help          show this text\n"
    "\n"
    "PROG is a path, or a name looked up in PATH. Signals: SIGINT and SIGQUIT reach PROG\n"
    "from the terminal; SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to actortrace are passed\n"
    "on to PROG.\n"
    "\n"
    "Exit status:\n"
    "  PROG's own exit status when it exits\n"
    "  128+N  PROG was killed by signal N (also said on standard error)\n"
    "  125    an unknown option, a bad value, no program given, FILE exists or cannot\n"
    "         be created (its directory missing or not writable), or the library cannot\n"
    "         be found\n"
    "  126    PROG cannot be run or cannot be traced: not executable; statically linked\n"
    "         (no dynamic loader reads LD_PRELOAD); setuid or setgid to another user or\n"
    "         group (the loader ignores LD_PRELOAD then); an ELF class or machine other\n"
    "         than the library's\n"
    "  127    PROG was not found\n";

enum {
    SET_OUT,
    SET_MODE,
    SET_BUFFER,
    SET_BLOCK,
    SET_RING_DIR,
    SET_ZSTD_LEVEL,
    SET_WRITER_NICE,
    SET_STACKS,
    SET_STACK_DEPTH,
    SET_STACK_EVERY,
};

struct setting {
    const char *option;
    const char *variable;
    bool (*valid)(const struct setting *s, const char *value);
    unsigned min, max; /* whole numbers: the range the recorder accepts (preload/config.c) */
    const char *expect;
};

static bool whole_number(const struct setting *s, const char *value)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(value, &end, 10);
    return !errno && end != value && !*end && isdigit((unsigned char)value[0]) && v >= s->min &&
           v <= s->max;
}

static bool mode_name(const struct setting *s, const char *value)
{
    (void)s;
    return !strcmp(value, "drop") || !strcmp(value, "block") || !strcmp(value, "overwrite");
}

static bool directory(const struct setting *s, const char *value)
{
    struct stat st;
    (void)s;
    return stat(value, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool file_name(const struct setting *s, const char *value)
{
    (void)s;
    return value[0] != '\0';
}

/* A comma-separated list of built-in event kinds, or "all": the names the recorder knows. */
static bool event_kinds(const struct setting *s, const char *value)
{
    static const char *const kinds[] = {
#define AT_KIND_NAME(e, str) str,
        AT_EVENT_LIST(AT_KIND_NAME)
#undef AT_KIND_NAME
            "all",
    };
    (void)s;
    for (const char *v = value; *v; v += *v == ',') {
        size_t len = strcspn(v, ","), i = 0;
        while (i < sizeof kinds / sizeof *kinds &&
               (strlen(kinds[i]) != len || strncmp(v, kinds[i], len) != 0))
            i++;
        if (i == sizeof kinds / sizeof *kinds)
            return false;
        v += len;
    }
    return value[0] != '\0' && value[strlen(value) - 1] != ',';
}

static const struct setting settings[] = {
    [SET_OUT] = {"output", "ACTORTRACE_OUT", file_name, 0, 0, "a file name"},
    [SET_MODE] = {"mode", "ACTORTRACE_MODE", mode_name, 0, 0, "drop, block or overwrite"},
    [SET_BUFFER] = {"buffer", "ACTORTRACE_BUFFER_MB", whole_number, 1, 65536,
                    "a whole number of MiB from 1 to 65536"},
    [SET_BLOCK] = {"block", "ACTORTRACE_BLOCK_KB", whole_number, 4, 4096,
                   "a whole number of KiB from 4 to 4096"},
    [SET_RING_DIR] = {"ring-dir", "ACTORTRACE_RING_DIR", directory, 0, 0, "a directory"},
    [SET_ZSTD_LEVEL] = {"zstd-level", "ACTORTRACE_ZSTD_LEVEL", whole_number, 1, 19,
                        "a whole number from 1 to 19"},
    [SET_WRITER_NICE] = {"writer-nice", "ACTORTRACE_WRITER_NICE", whole_number, 0, 19,
                         "a whole number from 0 to 19"},
    [SET_STACKS] = {"stacks", "ACTORTRACE_STACKS", event_kinds, 0, 0,
                    "a comma-separated list of event kinds (spawn, exit, send, recv, "
                    "step_begin, step_end, schedule, park, unpark, yield), or all"},
    [SET_STACK_DEPTH] = {"stack-depth", "ACTORTRACE_STACK_DEPTH", whole_number, 1, 32,
                         "a whole number from 1 to 32"},
    [SET_STACK_EVERY] = {"stack-every", "ACTORTRACE_STACK_EVERY", whole_number, 1, 1u << 30,
                         "a whole number from 1 to 1073741824"},
};

enum {
    OPT_SETTING = 256,
    OPT_GLIBC = OPT_SETTING + 64,
    OPT_NO_PATCH,
    OPT_PRELOAD,
    OPT_SHIM,
    OPT_TOP
};

#define MAX_SHIMS 8

struct record {
    const char *preload;          /* --preload */
    const char *library;          /* the library to preload, found */
    const char *shims[MAX_SHIMS]; /* --shim, preloaded after the library */
    unsigned nshims;
    char **argv;         /* PROG ARG... */
    char path[PATH_MAX]; /* PROG, found */
    struct elf_file elf; /* PROG */
    struct timespec start;
    bool top; /* --top */
};

static int usage_error(const char *fmt, const char *what)
{
    fputs("actortrace record: ", stderr);
    fprintf(stderr, fmt, what);
    fputs(" (actortrace record --help lists the options)\n", stderr);
    return -EINVAL;
}

static int set(int id, const char *value)
{
    const struct setting *s = &settings[id];
    if (s->valid(s, value))
        return setenv(s->variable, value, 1) == 0 ? 0 : -errno;
    fprintf(stderr, "actortrace record: --%s %s: not %s\n", s->option, value, s->expect);
    return -EINVAL;
}

static int bad_option(int c, char **argv)
{
    char name[3] = {'-', (char)optopt, '\0'};
    /* a long option's error leaves its value (ours are from 256) in optopt, not a letter */
    const char *what = optopt && optopt < OPT_SETTING ? name : argv[optind - 1];
    return usage_error(c == ':' ? "option '%s' needs a value" : "unknown option '%s'", what);
}

/* Returns 0 to run, 1 when --help was answered, -EINVAL on a usage error. */
static int parse(int argc, char **argv, struct record *r)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, OPT_SETTING + SET_OUT},
        {"mode", required_argument, NULL, OPT_SETTING + SET_MODE},
        {"buffer", required_argument, NULL, OPT_SETTING + SET_BUFFER},
        {"block", required_argument, NULL, OPT_SETTING + SET_BLOCK},
        {"ring-dir", required_argument, NULL, OPT_SETTING + SET_RING_DIR},
        {"zstd-level", required_argument, NULL, OPT_SETTING + SET_ZSTD_LEVEL},
        {"writer-nice", required_argument, NULL, OPT_SETTING + SET_WRITER_NICE},
        {"stacks", required_argument, NULL, OPT_SETTING + SET_STACKS},
        {"stack-depth", required_argument, NULL, OPT_SETTING + SET_STACK_DEPTH},
        {"stack-every", required_argument, NULL, OPT_SETTING + SET_STACK_EVERY},
        {"glibc", no_argument, NULL, OPT_GLIBC},
        {"no-patch", no_argument, NULL, OPT_NO_PATCH},
        {"preload", required_argument, NULL, OPT_PRELOAD},
        {"shim", required_argument, NULL, OPT_SHIM},
        {"top", no_argument, NULL, OPT_TOP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, err = 0;
    opterr = 0; /* our own messages, which say where the list is */
    while (!err && (c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(record_usage, stdout);
            return 1;
        }
        if (c == '?' || c == ':')
            err = bad_option(c, argv);
        else if (c == OPT_GLIBC)
            err = setenv("ACTORTRACE_GLIBC", "1", 1);
        else if (c == OPT_NO_PATCH)
            err = setenv("ACTORTRACE_PATCH", "0", 1);
        else if (c == OPT_PRELOAD)
            r->preload = optarg;
        else if (c == OPT_TOP)
            r->top = true;
        else if (c == OPT_SHIM && r->nshims == MAX_SHIMS)
            err = usage_error("%s", "more than 8 --shim");
        else if (c == OPT_SHIM)
            r->shims[r->nshims++] = optarg;
        else
            err = set(c == 'o' ? SET_OUT : c - OPT_SETTING, optarg);
    }
    if (!err && optind >= argc)
        err = usage_error("%s", "no program to run");
    r->argv = argv + optind;
    return err ? -EINVAL : 0;
}

static const char *pattern(void)
{
    const char *out = getenv("ACTORTRACE_OUT");
    return out && out[0] ? out : "actortrace-%p.trace";
}

/* The file the recorder names from PATTERN for process PID (preload/tracefile.c). */
static void expand(const char *pattern, pid_t pid, char *out, size_t cap)
{
    size_t len = 0;
    for (const char *p = pattern; *p && len + 24 < cap; p++) {
        if (p[0] == '%' && (p[1] == 'p' || p[1] == '%'))
            len += (size_t)(*++p == 'p' ? snprintf(out + len, cap - len, "%d", (int)pid)
                                        : snprintf(out + len, cap - len, "%%"));
        else
            out[len++] = *p;
    }
    out[len] = '\0';
}

/* Refuses what LD_PRELOAD cannot enter; 0 for a program it can, or a script (its interpreter
 * starts with the environment, preload included). */
static int check_traceable(const struct record *r, const struct elf_file *lib)
{
    struct stat st = {.st_mode = 0}; /* stays 0, neither setuid nor setgid, if stat fails */
    const char *prog = r->argv[0];
    stat(r->path, &st);
    if (r->elf.elf_class && (r->elf.elf_class != lib->elf_class || r->elf.machine != lib->machine))
        at__cli_say("%s is an ELF program of another class or machine (%d-bit, machine %u) than "
                    "%s (%d-bit, machine %u): the loader would not load the library into it",
                    prog, r->elf.elf_class == 1 ? 32 : 64, r->elf.machine, r->library,
                    lib->elf_class == 1 ? 32 : 64, lib->machine);
    else if (r->elf.elf_class && !at__elf_has_interp(&r->elf))
        at__cli_say("%s is statically linked (no PT_INTERP): no dynamic loader starts it, so "
                    "LD_PRELOAD and the tracer never enter it; link it dynamically against "
                    "its runtime to trace it",
                    prog);
    else if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
        at__cli_say("%s is setuid (to uid %u): it would run as another user, and the loader "
                    "ignores LD_PRELOAD then; trace it as that user, or a copy without the "
                    "setuid bit",
                    prog, (unsigned)st.st_uid);
    else if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
        at__cli_say("%s is setgid (to gid %u): it would run as another group, and the loader "
                    "ignores LD_PRELOAD then; trace a copy without the setgid bit",
                    prog, (unsigned)st.st_gid);
    else
        return 0;
    return -EPERM;
}

static int find(struct record *r)
{
    int err = at__cli_find_program(r->argv[0], r->path, sizeof r->path);
    if (err == -ENOENT) {
        at__cli_say("%s: program not found%s", r->argv[0],
                    strchr(r->argv[0], '/') ? "" : " in PATH");
        return EXIT_NOT_FOUND;
    }
    if (err == 0 && access(r->path, X_OK) < 0)
        err = -errno;
    if (err == 0 && (err = at__elf_open(r->path, &r->elf)) == 0)
        return 0;
    at__cli_say("%s: %s", r->argv[0], strerror(-err));
    return EXIT_CANNOT_TRACE;
}

/* A library LD_PRELOAD can hold and the loader can load: 0, or the refusal's exit status. */
static int preloadable(const char *path)
{
    if (strpbrk(path, ": \t\n")) {
        at__cli_say("%s: LD_PRELOAD cannot hold a path with ':' or a space", path);
        return EXIT_RECORD_ERROR;
    }
    struct elf_file lib;
    int bad = at__elf_open(path, &lib) < 0 || lib.elf_class == 0;
    at__elf_close(&lib);
    if (bad)
        at__cli_say("%s: not a shared library", path);
    return bad ? EXIT_RECORD_ERROR : 0;
}

/* Whether the recorder will be able to create the trace file NAME (PATTERN expanded): its
 * directory must exist and be writable, and a name without %p must be free. A directory that
 * depends on the pid cannot be checked. 0, or the refusal's exit status. */
static int creatable(const char *name)
{
    char dir[PATH_MAX];
    struct stat st;
    const char *pat = pattern(), *slash = strrchr(pat, '/'), *name_slash = strrchr(name, '/');
    if (slash && memchr(pat, '%', (size_t)(slash - pat)))
        return 0;
    snprintf(dir, sizeof dir, "%.*s", name_slash ? (int)(name_slash - name) : 1,
             name_slash ? name : ".");
    if (!dir[0])
        snprintf(dir, sizeof dir, "/");
    int err = stat(dir, &st) < 0             ? errno
              : !S_ISDIR(st.st_mode)         ? ENOTDIR
              : access(dir, W_OK | X_OK) < 0 ? errno
                                             : 0;
    if (err) {
        at__cli_say("cannot create %s: %s: %s", name, dir, strerror(err));
        return EXIT_RECORD_ERROR;
    }
    if (!strstr(pattern(), "%p") && lstat(name, &st) == 0) {
        at__cli_say("%s exists; the recorder creates its file new: remove it or name another "
                    "with -o",
                    name);
        return EXIT_RECORD_ERROR;
    }
    return 0;
}

/* Everything checked before the program runs: 0, or the exit status of the refusal. */
static int prepare(struct record *r)
{
    char name[PATH_MAX];
    int status = find(r);
    if (status)
        return status;
    if (!(r->library = at__cli_library(r->preload)))
        return EXIT_RECORD_ERROR;
    for (unsigned i = 0; i < r->nshims; i++)
        if ((status = preloadable(r->shims[i])))
            return status;
    if (strpbrk(r->library, ": \t\n")) {
        at__cli_say("%s: LD_PRELOAD cannot hold a path with ':' or a space", r->library);
        return EXIT_RECORD_ERROR;
    }
    struct elf_file lib;
    if (at__elf_open(r->library, &lib) < 0 || lib.elf_class == 0) {
        at__cli_say("%s: not a shared library", r->library);
        at__elf_close(&lib);
        return EXIT_RECORD_ERROR;
    }
    status = check_traceable(r, &lib) < 0 ? EXIT_CANNOT_TRACE : 0;
    at__elf_close(&lib);
    expand(pattern(), 0, name, sizeof name);
    return status ? status : creatable(name);
}

static volatile pid_t running; /* the program, while it runs: where forwarded signals go */

static void forward(int sig)
{
    if (running > 0)
        kill(running, sig);
}

/* The file --top sends the program's output to: its own trace's name with ".out". */
static void output_name(pid_t pid, char *out, size_t cap)
{
    char trace[PATH_MAX];
    expand(pattern(), pid, trace, sizeof trace);
    snprintf(out, cap, "%s.out", trace);
}

/* In the program, with --top: its output to a file, its input from /dev/null, so that the
 * screen and the keys are the view's. */
static void away_from_screen(void)
{
    char name[PATH_MAX + 8];
    output_name(getpid(), name, sizeof name);
    int out = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0 ||
        dup2(in, STDIN_FILENO) < 0) {
        at__cli_say("--top: cannot send the program's output to %s: %s", name, strerror(errno));
        _exit(EXIT_RECORD_ERROR);
    }
}

/* With --top: the view of the program's trace, in a process of its own (-1: none). */
static pid_t start_view(const struct record *r, pid_t pid)
{
    char trace[PATH_MAX];
    if (!r->top || pid <= 0)
        return -1;
    expand(pattern(), pid, trace, sizeof trace);
    pid_t view = fork();
    if (view == 0) {
        char *traces[] = {trace, NULL};
        _exit(at__top_watch(traces));
    }
    return view;
}

/* In the child: the preloads the user set, then the library, then the program. The user's come
 * first: a sanitizer's runtime must, and a shim built on its own (pkg-config actortrace) must
 * come before the library, whose at_resolve looks up the real function after itself. */
static void start(const struct record *r, const struct sigaction *terminal)
{
    const char *user = getenv("LD_PRELOAD");
    size_t len = (user ? strlen(user) + 1 : 0) + strlen(r->library) + 1;
    for (unsigned i = 0; i < r->nshims; i++)
        len += strlen(r->shims[i]) + 1;
    char *preload = malloc(len);
    if (preload) {
        int n = snprintf(preload, len, "%s%s%s", user ? user : "", user && user[0] ? ":" : "",
                         r->library);
        for (unsigned i = 0; i < r->nshims; i++)
            n += snprintf(preload + n, len - (size_t)n, ":%s", r->shims[i]);
        setenv("LD_PRELOAD", preload, 1);
    }
    unsetenv("ACTORTRACE_LIB"); /* the command's, not a recorder setting */
    if (r->top)
        away_from_screen();
    sigaction(SIGINT, &terminal[0], NULL);
    sigaction(SIGQUIT, &terminal[1], NULL);
    execv(r->path, r->argv);
    int err = errno;
    at__cli_say("cannot run %s: %s", r->argv[0], strerror(err));
    _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_TRACE);
}

/* Runs the program and returns its wait status, or -1. SIGINT and SIGQUIT from the terminal
 * reach the program (its process group), so the command ignores them while it waits, as
 * system(3) does; the signals a user sends to the command are passed on. */
static int run(struct record *r, pid_t *pid)
{
    static const int passed_on[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
    struct sigaction ignore = {.sa_handler = SIG_IGN}, pass = {.sa_handler = forward};
    struct sigaction terminal[2], before[sizeof passed_on / sizeof *passed_on];
    int status;
    sigaction(SIGINT, &ignore, &terminal[0]);
    sigaction(SIGQUIT, &ignore, &terminal[1]);
    pass.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof passed_on / sizeof *passed_on; i++) {
        sigaction(passed_on[i], NULL, &before[i]);
        if (before[i].sa_handler != SIG_IGN) /* else the program inherits it ignored (nohup) */
            sigaction(passed_on[i], &pass, NULL);
    }
    clock_gettime(CLOCK_REALTIME_COARSE, &r->start); /* the clock of file times */
    fflush(NULL);
    if ((*pid = fork()) == 0)
        start(r, terminal);
    running = *pid;
    pid_t view = start_view(r, *pid);
    while (*pid > 0 && waitpid(*pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    running = 0;
    while (view > 0 && waitpid(view, NULL, 0) < 0 && errno == EINTR)
        continue;
    /* the program has ended: what follows (the summary, which reads every trace, and the
     * tracedecode it runs) takes every signal as the command was started to take it */
    sigaction(SIGINT, &terminal[0], NULL);
    sigaction(SIGQUIT, &terminal[1], NULL);
    for (size_t i = 0; i < sizeof passed_on / sizeof *passed_on; i++)
        sigaction(passed_on[i], &before[i], NULL);
    return *pid > 0 ? status : -1;
}

/* Whether NAME is a file the recorder may have named from PAT (a file name, no directory): %p
 * matches a pid, %% a %, and the ".N" suffixes of forked children and later images may follow. */
static bool names_file(const char *pat, const char *name)
{
    for (; *pat; pat++, name++) {
        if (pat[0] == '%' && pat[1] == 'p') {
            if (!isdigit((unsigned char)*name))
                return false;
            while (isdigit((unsigned char)name[1]))
                name++;
            pat++;
            continue;
        }
        if (pat[0] == '%' && pat[1] == '%')
            pat++;
        if (*name != *pat)
            return false;
    }
    while (name[0] == '.' && isdigit((unsigned char)name[1]))
        for (name++; isdigit((unsigned char)*name);)
            name++;
    return *name == '\0';
}

static bool written_since(const char *path, const struct timespec *start)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           (st.st_mtim.tv_sec > start->tv_sec ||
            (st.st_mtim.tv_sec == start->tv_sec && st.st_mtim.tv_nsec >= start->tv_nsec));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define MAX_TRACES 256

/* The trace files of this run: the program's own first, then those of the processes it made
 * (forked children, later images), found beside it by name and time. FILES holds MAX_TRACES
 * and a NULL after the last; returns how many. */
static size_t find_traces(const struct record *r, pid_t pid, char **files)
{
    char own[PATH_MAX], dir[PATH_MAX];
    const char *slash = strrchr(pattern(), '/');
    size_t n = 0;
    expand(pattern(), pid, own, sizeof own);
    if (written_since(own, &r->start))
        files[n++] = strdup(own);
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - pattern()) + 1 : 1,
             slash ? pattern() : ".");
    DIR *d = strchr(dir, '%') ? NULL : opendir(dir); /* a directory per pid: the own file only */
    for (struct dirent *e; d && n < MAX_TRACES && (e = readdir(d));) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s%s", slash ? dir : "", e->d_name);
        if (names_file(slash ? slash + 1 : pattern(), e->d_name) && strcmp(path, own) != 0 &&
            written_since(path, &r->start))
            files[n++] = strdup(path);
    }
    if (d)
        closedir(d);
    size_t own_first = n && strcmp(files[0], own) == 0;
    qsort(files + own_first, n - own_first, sizeof *files, by_name);
    files[n] = NULL;
    return n;
}

static long long json_number(const char *json, const char *key)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":", key);
    const char *at = strstr(json, needle);
    return at ? strtoll(at + strlen(needle), NULL, 10) : -1;
}

/* One line for a file: its events and drops, from tracedecode's statistics. */
static void summarise(char *file)
{
    static const char *const stats[] = {"--format", "stats", "--json", "--", NULL};
    char dash[] = "./-"; /* a trace named "-" (-o -), which tracedecode would take for stdin */
    char *const files[] = {strcmp(file, "-") == 0 ? dash : file, NULL};
    char json[4096]; /* the totals lead the report */
    int status = at__cli_decode(stats, files, json, sizeof json);
    long long events = json_number(json, "events"), dropped = json_number(json, "dropped");
    fprintf(stderr, "actortrace: trace: %s", file);
    if (status > 1 || events < 0 || dropped < 0)
        fprintf(stderr, " (tracedecode could not read it: exit status %d)\n", status);
    else
        fprintf(stderr, ": %lld events, %lld dropped%s\n", events, dropped,
                strstr(json, "\"truncated\":true") ? ", truncated (not ended cleanly)" : "");
}

static void report(const struct record *r, pid_t pid)
{
    char *files[MAX_TRACES + 1];
    size_t n = find_traces(r, pid, files);
    for (size_t i = 0; i < n; i++)
        summarise(files[i]);
    if (n == 0) {
        at__cli_say("no trace was written: %s recorded no event", r->argv[0]);
        at__list_explain(&r->elf, r->library);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
}

/* The command's exit status for the program's wait status: its own, or 128+N after signal N. */
static int program_status(const char *prog, int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        at__cli_say("%s was killed by signal %d (SIG%s)%s; exiting with status %d", prog, sig,
                    sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
                    WCOREDUMP(status) ? ", core dumped" : "", 128 + sig);
        return 128 + sig;
    }
    if (WEXITSTATUS(status) != 0)
        at__cli_say("%s exited with status %d", prog, WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

int at__record_main(int argc, char **argv)
{
    struct record r = {.preload = NULL};
    pid_t pid;
    int err = parse(argc, argv, &r);
    if (err)
        return err > 0 ? 0 : EXIT_RECORD_ERROR;
    int status = prepare(&r);
    int wait_status = status ? 0 : run(&r, &pid);
    if (!status && wait_status < 0) {
        at__cli_say("cannot start %s: %s", r.argv[0], strerror(errno));
        status = EXIT_RECORD_ERROR;
    } else if (!status) {
        status = program_status(r.argv[0], wait_status);
        report(&r, pid);
        char output[PATH_MAX + 8];
        output_name(pid, output, sizeof output);
        if (r.top)
            at__cli_say("the output of %s is in %s", r.argv[0], output);
    }
    at__elf_close(&r.elf);
    return status;
}
