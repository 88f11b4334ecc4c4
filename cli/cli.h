/* The actortrace command: what its subcommands share. main.c finds the library and tracedecode
 * and dispatches; record.c runs a program traced; list.c names the runtimes; elf.c reads the
 * ELF files they inspect. */
#ifndef AT_CLI_H
#define AT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses of the command itself. record uses 125-127, above what most programs return
 * and as env(1) and timeout(1) do, so that the traced program's own status passes through. */
enum {
    EXIT_USAGE = 2,          /* report, view, decode, list: a bad command line or file */
    EXIT_RECORD_ERROR = 125, /* record: bad options, no library, a trace file in the way */
    EXIT_CANNOT_TRACE = 126, /* record: a program that cannot run or cannot be traced */
    EXIT_NOT_FOUND = 127,    /* record: no such program */
};

/* ===== ELF files (elf.c) ==================================================================== */

/* A file mapped for reading. Only ELFCLASS64 files of the host's byte order are read in full;
 * for others, class and machine are known and every query answers "no". */
struct elf_file {
    const unsigned char *data;
    size_t size;
    int elf_class;    /* ELFCLASS32 or ELFCLASS64; 0: not an ELF file */
    unsigned machine; /* e_machine */
};

/* Maps PATH. Returns 0 (also for a file that is not ELF: elf_class 0) or a negative errno. */
int at__elf_open(const char *path, struct elf_file *elf);
void at__elf_close(struct elf_file *elf); /* accepts a file that failed to open */

/* true when the program has a PT_INTERP: the dynamic loader starts it, so LD_PRELOAD applies. */
bool at__elf_has_interp(const struct elf_file *elf);
/* true when a DT_NEEDED entry starts with PREFIX ("libczmq.so" matches libczmq.so.4). */
bool at__elf_needs(const struct elf_file *elf, const char *prefix);
/* true when the dynamic symbol table defines SYMBOL (a global or weak definition). */
bool at__elf_exports(const struct elf_file *elf, const char *symbol);
/* true when the symbol table (.symtab, else .dynsym) defines SYMBOL: also a function linked
 * into the program and not exported. */
bool at__elf_defines(const struct elf_file *elf, const char *symbol);

/* ===== The command's companions (main.c) ===================================================== */

/* The library to preload: OPTION (record --preload) when given, else $ACTORTRACE_LIB, else
 * libactortrace.so beside the command (the build tree), else ../lib/actortrace/ from it (an
 * installed PREFIX). Returns an absolute path, or NULL after saying on stderr where it looked. */
const char *at__cli_library(const char *option);

/* Runs tracedecode (beside the command) with FRONT then REST as its arguments (each a
 * NULL-ended list), waits, and returns its exit status (128+N when killed by signal N, 2 when
 * it could not be run). With OUT non-NULL, its standard output is read into OUT (at most CAP - 1
 * bytes are kept, NUL-ended). */
int at__cli_decode(const char *const front[], char *const rest[], char *out, size_t cap);

/* Finds PROG as execvp(3) would: a name with a '/' as it is, another in each directory of PATH.
 * Writes its path to OUT; returns 0, -ENOENT when it is not found, or -EACCES when only files
 * that are not executable were found. */
int at__cli_find_program(const char *prog, char *out, size_t cap);

/* "actortrace: " and a formatted message on stderr. */
void at__cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ===== Subcommands ========================================================================== */

int at__record_main(int argc, char **argv); /* record.c */
int at__list_main(int argc, char **argv);   /* list.c */
int at__top_main(int argc, char **argv);    /* top.c */
/* top.c: tracedecode --top on the NULL-ended TRACES; returns its exit status */
int at__top_watch(char *const traces[]);
/* list.c: why a program recorded nothing, on stderr: the runtimes it links that LIBRARY traces,
 * or that it links none of them */
void at__list_explain(const struct elf_file *prog, const char *library);

#endif
