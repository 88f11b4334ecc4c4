/* actortrace list: the runtimes actortrace has shims for, whether the library to preload holds
 * each one's shim, and which of them a program links. A runtime is recognised by the library a
 * program names in its DT_NEEDED entries, and its shim by one symbol the shim defines, so the
 * answer is read from the files themselves (a test copy of the library answers for itself). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char list_usage[] =
    "Usage: actortrace list [--shim LIB]... [PROG]\n"
    "\n"
    "Lists the runtimes actortrace knows: the library a program links to use each one, and\n"
    "whether the library that record preloads has its shim. With PROG (a path, or a name\n"
    "looked up in PATH), also which of them PROG links: the libraries it names itself\n"
    "(DT_NEEDED), not those its libraries pull in; \"in\" for a runtime linked into PROG,\n"
    "which record traces by patching its functions' entries; or is: the BEAM's emulator,\n"
    "beam.smp, is its own runtime. Each --shim LIB (as given to record) adds a row: SHIM is\n"
    "yes when LIB is a shim shimgen generated.\n"
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
    bool patched; /* linked into a program, it is traced by entry patching (docs/PATCHING.md) */
} runtimes[] = {
    {"refrt", "librefrt.so", false, "rt_send", NULL, "the reference runtime (tests/targets/rt)",
     true},
    {"czmq", "libczmq.so", false, "zactor_new", NULL, "CZMQ 4.2 actors: zactor, zloop, zpoller",
     false},
    {"caf", "libcaf_core.so", false, "_ZN3caf15scheduled_actor6launchEPNS_14execution_unitEbb",
     NULL, "CAF 0.17.6, the C++ Actor Framework", false},
    {"aether", "libaether.so", false, "scheduler_send_local", NULL,
     "Aether v0.572.0's runtime, built as a shared library", true},
    {"beam", "beam.smp", true, "erts_schedule", NULL,
     "the Erlang emulator of OTP 25.2.3 (erts 13.1.5): Erlang and Elixir", false},
    {"glibc", "libc.so.6", false, "pthread_cond_wait", "--glibc",
     "glibc's condvars, semaphores, futexes (record --glibc)", false},
};

#define N_RUNTIMES (sizeof runtimes / sizeof *runtimes)
#define MAX_SHIMS  8

/* A generated shim's row: named after its file (libshim-NAME.so), its runtime unknown here. */
static void print_shim(const char *path, const char *name)
{
    struct elf_file shim;
    const char *file = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int n = strncmp(file, "libshim-", 8) == 0 ? (int)strcspn(file + 8, ".") : (int)strlen(file);
    bool generated = at__elf_open(path, &shim) == 0 && shim.elf_class != 0 &&
                     at__elf_exports(&shim, "actortrace_generated_shim");
    printf("%-8.*s %-13s %-6s", n, file + (strncmp(file, "libshim-", 8) == 0 ? 8 : 0), "(--shim)",
           generated ? "yes" : "no");
    if (name)
        printf(" %-8s", "-");
    printf(" %s\n", path);
    at__elf_close(&shim);
}

static int open_elf(const char *path, struct elf_file *elf)
{
    int err = at__elf_open(path, elf);
    if (err < 0)
        at__cli_say("%s: %s", path, strerror(-err));
    else if (elf->elf_class == 0)
        at__cli_say("%s: not an ELF file", path);
    return err < 0 ? err : elf->elf_class == 0 ? -ENOEXEC : 0;
}

/* "yes" when the program links the runtime's library or is the runtime (the BEAM's emulator
 * exports its probe), "in" when the runtime is linked into it (the library patches it), else
 * "no". */
static const char *linked(const struct elf_file *prog, const struct runtime *r)
{
    if (r->program)
        return at__elf_exports(prog, r->probe) ? "yes" : "no";
    if (at__elf_needs(prog, r->soname))
        return "yes";
    return r->patched && at__elf_defines(prog, r->probe) ? "in" : "no";
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
            printf(" %-8s", linked(prog, r));
        printf(" %s\n", r->what);
    }
    for (size_t i = 0; name && i < N_RUNTIMES; i++)
        if (strcmp(linked(prog, &runtimes[i]), "in") == 0)
            printf("%s has %s linked in: record traces it by patching its functions' entries\n",
                   name, runtimes[i].name);
}

int at__list_main(int argc, char **argv)
{
    const char *shims[MAX_SHIMS];
    int nshims = 0;
    while (argc > 2 && strcmp(argv[1], "--shim") == 0 && nshims < MAX_SHIMS) {
        shims[nshims++] = argv[2];
        argc -= 2, argv += 2;
    }
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
        for (int i = 0; i < nshims; i++)
            print_shim(shims[i], argc == 2 ? argv[1] : NULL);
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
    char traced[256] = "";
    for (size_t i = 0; i < N_RUNTIMES; i++) {
        const struct runtime *r = &runtimes[i];
        if (!r->option && strcmp(linked(prog, r), "no") != 0 && at__elf_exports(&lib, r->probe))
            snprintf(traced + strlen(traced), sizeof traced - strlen(traced), "%s%s",
                     traced[0] ? ", " : "", r->name);
    }
    if (traced[0])
        at__cli_say("it links %s, which the library traces: it made no call the shim records",
                    traced);
    else
        at__cli_say("it links none of the runtimes the library traces (see actortrace list PROG)");
    at__elf_close(&lib);
}
