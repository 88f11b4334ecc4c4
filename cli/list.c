/* actortrace list: the runtimes actortrace has shims for, whether the library to preload holds
 * each one's shim, and which of them a program links. A runtime is recognised by the library a
 * program names in its DT_NEEDED entries, and its shim by one symbol the shim defines, so the
 * answer is read from the files themselves (a test copy of the library answers for itself). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char list_usage[] =
    "Usage: actortrace list [PROG]\n"
    "\n"
    "Lists the runtimes actortrace knows: the library a program links to use each one, and\n"
    "whether the library that record preloads has its shim. With PROG (a path, or a name\n"
    "looked up in PATH), also which of them PROG links: the libraries it names itself\n"
    "(DT_NEEDED), not those its libraries pull in; or is: the BEAM's emulator, beam.smp,\n"
    "is its own runtime.\n"
    "\n"
    "Exit status: 0; 2 when PROG or the library cannot be read.\n";

static const struct runtime {
    const char *name;
    const char *soname; /* what a program's DT_NEEDED entry starts with when it links it, or
                         * the program's name when it is the runtime (program) */
    bool program;       /* the runtime is the program itself: it exports probe */
    const char *probe;  /* a function the shim wraps: the library has the shim when it defines it */
    const char *option; /* the record option that turns the shim on; NULL: always on */
    const char *what;
} runtimes[] = {
    {"refrt", "librefrt.so", false, "rt_send", NULL, "the reference runtime (tests/rt)"},
    {"czmq", "libczmq.so", false, "zactor_new", NULL, "CZMQ 4.2 actors: zactor, zloop, zpoller"},
    {"caf", "libcaf_core.so", false, "_ZN3caf15scheduled_actor6launchEPNS_14execution_unitEbb",
     NULL, "CAF 0.17.6, the C++ Actor Framework"},
    {"aether", "libaether.so", false, "scheduler_send_local", NULL,
     "Aether v0.572.0's runtime, built as a shared library"},
    {"beam", "beam.smp", true, "erts_schedule", NULL,
     "the Erlang emulator of OTP 25.2.3 (erts 13.1.5): Erlang and Elixir"},
    {"glibc", "libc.so.6", false, "pthread_cond_wait", "--glibc",
     "glibc's condvars, semaphores, futexes (record --glibc)"},
};

#define N_RUNTIMES (sizeof runtimes / sizeof *runtimes)

static int open_elf(const char *path, struct elf_file *elf)
{
    int err = at__elf_open(path, elf);
    if (err < 0)
        at__cli_say("%s: %s", path, strerror(-err));
    else if (elf->elf_class == 0)
        at__cli_say("%s: not an ELF file", path);
    return err < 0 ? err : elf->elf_class == 0 ? -ENOEXEC : 0;
}

/* Whether prog uses runtime r: links its library, or is the runtime (exports its probe). */
static bool uses(const struct elf_file *prog, const struct runtime *r)
{
    return r->program ? at__elf_exports(prog, r->probe) : at__elf_needs(prog, r->soname);
}

static void print_table(const struct elf_file *lib, const struct elf_file *prog, const char *name)
{
    printf("%-8s %-13s %-6s", "RUNTIME", "LIBRARY", "SHIM");
    if (name)
        printf(" %-8s", "LINKED");
    printf(" WHAT\n");
    for (size_t i = 0; i < N_RUNTIMES; i++) {
        const struct runtime *r = &runtimes[i];
        printf("%-8s %-13s %-6s", r->name, r->soname,
               at__elf_exports(lib, r->probe) ? "yes" : "no");
        if (name)
            printf(" %-8s", uses(prog, r) ? "yes" : "no");
        printf(" %s\n", r->what);
    }
}

int at__list_main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (argv[1][0] == '-'))) {
        bool help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
        fputs(list_usage, help ? stdout : stderr);
        return help ? 0 : EXIT_USAGE;
    }
    char prog_path[4096];
    const char *library = at__cli_library(NULL);
    struct elf_file lib, prog = {.data = NULL};
    if (!library || open_elf(library, &lib) < 0)
        return EXIT_USAGE;
    int status = 0;
    int err = argc == 2 ? at__cli_find_program(argv[1], prog_path, sizeof prog_path) : 0;
    if (err < 0)
        at__cli_say("%s: %s", argv[1], err == -ENOENT ? "program not found" : strerror(-err));
    if (err < 0 || (argc == 2 && open_elf(prog_path, &prog) < 0))
        status = EXIT_USAGE;
    if (status == 0) {
        printf("library: %s\n", library);
        print_table(&lib, &prog, argc == 2 ? argv[1] : NULL);
    }
    at__elf_close(&prog);
    at__elf_close(&lib);
    return status;
}

void at__list_explain(const struct elf_file *prog, const char *library)
{
    struct elf_file lib;
    if (open_elf(library, &lib) < 0)
        return;
    char linked[256] = "";
    for (size_t i = 0; i < N_RUNTIMES; i++) {
        const struct runtime *r = &runtimes[i];
        if (!r->option && uses(prog, r) && at__elf_exports(&lib, r->probe))
            snprintf(linked + strlen(linked), sizeof linked - strlen(linked), "%s%s",
                     linked[0] ? ", " : "", r->name);
    }
    if (linked[0])
        at__cli_say("it links %s, which the library traces: it made no call the shim records",
                    linked);
    else
        at__cli_say("it links none of the runtimes the library traces (see actortrace list PROG)");
    at__elf_close(&lib);
}
