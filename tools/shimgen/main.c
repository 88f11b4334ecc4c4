/* shimgen SPEC -o DIR: validates a runtime's spec, writes its shim DIR/shim-NAME.c and builds
 * DIR/libshim-NAME.so, to preload after libactortrace.so (docs/SHIMGEN.md); with --linked,
 * writes only the C, which the library's build compiles into a copy of the library.
 *
 * Exit status: 0 done, 1 the spec has mistakes (each one on stderr as FILE:LINE: message, and
 * nothing was written, or the compiler's errors about wrappers, given at their spec lines),
 * 2 usage, I/O or compiler error. A run reads one small file and exits,
 * so what it allocates is never freed. */
#include <errno.h>
#include <libgen.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shimgen.h"

#ifndef SHIMGEN_INCLUDE
#define SHIMGEN_INCLUDE "/usr/local/include"
#endif

#define MAX_INCLUDE_DIRS 16

extern char **environ;

static const char usage[] =
    "usage: shimgen SPEC -o DIR [-I DIR]... [--program PROG] [--no-build | --linked]\n"
    "  Validates SPEC, writes DIR/shim-NAME.c (NAME from the spec's 'runtime' line) and builds\n"
    "  DIR/libshim-NAME.so with $CC (default cc). Every function is checked against the\n"
    "  libraries the spec names ('library', 'pkg'); the compiler checks each prototype\n"
    "  against the spec's headers, its errors given at the spec's lines.\n"
    "  -I DIR          a directory for the runtime's headers (the spec's own is searched too)\n"
    "  --program PROG  also check that PROG imports every function the spec wraps\n"
    "  --no-build      write the C and print the command that builds it\n"
    "  --linked        write the C of a shim compiled into the library itself, beside its\n"
    "                  own shims (shim/support.h), and build nothing; its functions may be\n"
    "                  'patchable'\n"
    "Trace with\n"
    "    LD_PRELOAD=/path/to/libactortrace.so:DIR/libshim-NAME.so ./program\n"
    "or  actortrace record --shim DIR/libshim-NAME.so -- ./program\n"
    "Exit status: 0 done; 1 the spec has mistakes (each as SPEC:LINE: message; nothing is\n"
    "built); 2 usage, I/O or compiler error.\n"
    "The spec language: shimgen(1), and docs/SHIMGEN.md (installed in\n"
    "PREFIX/share/doc/actortrace/docs/).\n";

struct options {
    const char *spec, *dir, *program;
    const char *includes[MAX_INCLUDE_DIRS];
    int nincludes, no_build, linked;
};

static int parse_args(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--program") == 0 && i + 1 < argc) {
            o->program = argv[++i];
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "-I") == 0) && i + 1 < argc) {
            if (a[1] == 'o')
                o->dir = argv[++i];
            else if (o->nincludes < MAX_INCLUDE_DIRS)
                o->includes[o->nincludes++] = argv[++i];
        } else if (strcmp(a, "--no-build") == 0) {
            o->no_build = 1;
        } else if (strcmp(a, "--linked") == 0) {
            o->linked = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (a[0] != '-' && !o->spec) {
            o->spec = a;
        } else {
            return -1;
        }
    }
    return o->spec && o->dir ? 0 : -1;
}

static int write_shim(const struct spec *spec, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "shimgen: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int err = emit_shim(spec, out);
    if (fclose(out) != 0 || err) {
        fprintf(stderr, "shimgen: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* The compiler command, NULL-terminated: the flags every shim needs (PIC, initial-exec TLS
 * like the core's, the warnings of the project) and the include directories. */
static char **build_command(const struct options *o, const struct spec *spec, const char *source,
                            const char *library)
{
    static char *argv[64];
    int n = 0;
    const char *cc = getenv("CC");
    argv[n++] = xstrdup(cc && *cc ? cc : "cc");
    const char *flags[] = {"-O2",     "-g",        "-std=gnu11", "-Wall",
                           "-Wextra", "-Werror",   "-fPIC",      "-ftls-model=initial-exec",
                           "-shared", "-Wl,-z,now"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        argv[n++] = xstrdup(flags[i]);
    argv[n++] = xprintf("-I%s", SHIMGEN_INCLUDE);
    char *spec_dir = xstrdup(o->spec);
    argv[n++] = xprintf("-I%s", dirname(spec_dir));
    for (int i = 0; i < o->nincludes; i++)
        argv[n++] = xprintf("-I%s", o->includes[i]);
    char *pkg = spec->pkg_cflags ? xstrdup(spec->pkg_cflags) : NULL;
    for (char *flag = pkg ? strtok(pkg, " ") : NULL; flag && n < 56; flag = strtok(NULL, " "))
        argv[n++] = flag;
    argv[n++] = "-o";
    argv[n++] = (char *)library;
    argv[n++] = (char *)source;
    argv[n++] = "-ldl";
    argv[n] = NULL;
    return argv;
}

static void print_command(char **argv)
{
    for (char **a = argv; *a; a++)
        printf("%s%s", *a, a[1] ? " " : "\n");
    fflush(stdout);
}

/* The spec line of the wrapper around line `line` of the generated source: the line named by
 * the nearest comment "/\* SPEC:LINE:" above it, which every wrapper has; 0 when none. */
static int spec_line_of(const char *source, const char *spec, long line)
{
    FILE *in = fopen(source, "r");
    char buf[4096], *prefix = xprintf("/* %s:", spec);
    int found = 0;
    for (long n = 1; in && n <= line && fgets(buf, sizeof buf, in); n++)
        if (strncmp(buf, prefix, strlen(prefix)) == 0)
            found = atoi(buf + strlen(prefix));
    if (in)
        fclose(in);
    return found;
}

/* One line of the compiler's output: "SOURCE:N:C: words" about a wrapper is said as
 * "SPEC:LINE: words (SOURCE:N:C)". Returns 1 when it was an error of the spec's. */
static int compiler_line(const char *line, const char *source, const char *spec)
{
    size_t n = strlen(source);
    char *end;
    long at = strncmp(line, source, n) == 0 && line[n] == ':' ? strtol(line + n + 1, &end, 10) : 0;
    int spec_line = at > 0 ? spec_line_of(source, spec, at) : 0;
    if (!spec_line) {
        fputs(line, stderr);
        return 0;
    }
    const char *words = strchr(end + 1, ':') ? strchr(end + 1, ':') + 2 : end + 1;
    fprintf(stderr, "%s:%d: %.*s (%.*s)\n", spec, spec_line, (int)strcspn(words, "\n"), words,
            (int)(words - 2 - line), line);
    return strncmp(words, "error", 5) == 0;
}

/* Runs the compiler on `source`, its messages about wrappers given with their spec lines.
 * Returns 0, 1 when it found mistakes in the spec, 2 on any other failure. */
static int run(char **argv, const char *source, const char *spec)
{
    print_command(argv);
    int out[2];
    posix_spawn_file_actions_t actions;
    if (pipe(out) < 0 || posix_spawn_file_actions_init(&actions) != 0 ||
        posix_spawn_file_actions_adddup2(&actions, out[1], 2) != 0) {
        perror("shimgen");
        return 2;
    }
    pid_t pid;
    int status, err = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
    close(out[1]);
    if (err) {
        fprintf(stderr, "shimgen: %s: %s\n", argv[0], strerror(err));
        return 2;
    }
    FILE *messages = fdopen(out[0], "r");
    char line[8192];
    int spec_errors = 0;
    while (messages && fgets(line, sizeof line, messages))
        spec_errors += compiler_line(line, source, spec);
    if (messages)
        fclose(messages);
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "shimgen: the compiler failed on the generated shim %s%s\n", source,
                spec_errors ? ": the lines above name the spec's" : "");
        return spec_errors ? 1 : 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o = {0};
    if (parse_args(argc, argv, &o) < 0) {
        fputs(usage, stderr);
        return 2;
    }
    struct spec spec = {0};
    if (spec_read(&spec, o.spec) < 0)
        return 2;
    spec.linked = o.linked;
    int mistakes = spec_check(&spec);
    if (mistakes == 0)
        mistakes = check_libraries(&spec, o.program);
    if (mistakes < 0)
        return 2;
    if (mistakes > 0) {
        spec_report(&spec);
        fprintf(stderr, "shimgen: %d mistake%s in %s; nothing generated\n", spec.errors,
                spec.errors == 1 ? "" : "s", o.spec);
        return 1;
    }
    if (mkdir(o.dir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "shimgen: %s: %s\n", o.dir, strerror(errno));
        return 2;
    }
    char *source = xprintf("%s/shim-%s.c", o.dir, spec.runtime.text);
    char *library = xprintf("%s/libshim-%s.so", o.dir, spec.runtime.text);
    if (write_shim(&spec, source) < 0)
        return 2;
    if (o.linked)
        return 0;
    char **command = build_command(&o, &spec, source, library);
    if (o.no_build) {
        print_command(command);
        return 0;
    }
    return run(command, source, o.spec);
}
