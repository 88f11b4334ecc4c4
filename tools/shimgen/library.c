/* Checking a spec against the runtime it describes. Every function must be exported by one of
 * the libraries the spec names (`library FILE`, or the -l libraries of a `pkg NAME`): a wrapper
 * of a name the runtime does not have is built and never runs. With --program, the program must
 * import each function too, since the program's calls reach a wrapper through its PLT. */
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shimgen.h"

struct library {
    const char *name;
    void *handle;
};

/* The standard output of a shell command, without the blanks at its end; NULL on failure. */
static char *command_output(const char *command)
{
    FILE *p = popen(command, "r");
    if (!p)
        return NULL;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    if (pclose(p) != 0)
        return NULL;
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    return xstrdup(buf);
}

static int open_library(struct spec *spec, int line, const char *name, struct library *lib)
{
    lib->name = name;
    lib->handle = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
    if (!lib->handle)
        spec_error(spec, line, "cannot load %s: %s", name, dlerror());
    return lib->handle ? 1 : 0;
}

/* pkg NAME: its compiler flags, and its -l libraries (as libX.so) into `libs`. */
static int open_pkg(struct spec *spec, const struct directive *d, struct library *libs, int room)
{
    const char *name = d->text;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("_.+-", *c)) {
            spec_error(spec, d->line, "a pkg-config package name is one word, not '%s'", name);
            return 0;
        }
    char *cflags = command_output(xprintf("pkg-config --cflags %s 2>&1", name));
    char *ls = command_output(xprintf("pkg-config --libs-only-l %s 2>&1", name));
    if (!cflags || !ls) {
        spec_error(spec, d->line, "pkg-config knows no package '%s'", name);
        return 0;
    }
    spec->pkg_cflags = xprintf("%s %s", spec->pkg_cflags ? spec->pkg_cflags : "", cflags);
    /* Those without a libX.so link (glibc's -lpthread, -ldl) are left out: they are not the
     * runtime's own. */
    int n = 0;
    for (char *l = strtok(ls, " "); l && n < room; l = strtok(NULL, " "))
        if (strncmp(l, "-l", 2) == 0) {
            libs[n].name = xprintf("lib%s.so", l + 2);
            libs[n].handle = dlopen(libs[n].name, RTLD_LAZY | RTLD_LOCAL);
            n += libs[n].handle != NULL;
        }
    if (n == 0)
        spec_error(spec, d->line, "no library of package '%s' can be loaded (%s)", name, ls);
    return n;
}

/* Whether `symbol` is defined by the library itself, not only by one it depends on. */
static int defines(const struct library *lib, const char *symbol)
{
    void *address = dlsym(lib->handle, symbol);
    struct link_map *map;
    Dl_info info;
    if (!address || dlinfo(lib->handle, RTLD_DI_LINKMAP, &map) != 0 || !dladdr(address, &info))
        return 0;
    return info.dli_fname && strcmp(info.dli_fname, map->l_name) == 0;
}

static void check_defined(struct spec *spec, const struct library *libs, int n)
{
    char *names = xstrdup("");
    for (int i = 0; i < n; i++)
        names = xprintf("%s%s%s", names, i ? ", " : "", libs[i].name);
    for (int b = 0; b < spec->nblocks; b++) {
        const struct block *block = spec->blocks[b];
        int found = block->is_callback || block->is_after_half;
        for (int i = 0; i < n && !found; i++)
            found = defines(&libs[i], block->symbol);
        if (!found)
            spec_error(spec, block->line, "%s is not in %s: its wrapper would never run",
                       block->symbol, names);
    }
}

/* The names the ELF file imports (its undefined dynamic symbols), NUL-separated, or NULL. */
static char *imports_of(const char *program, size_t *size)
{
    int fd = open(program, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr))
        return NULL;
    const unsigned char *file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (file == MAP_FAILED)
        return NULL;
    const Elf64_Ehdr *eh = (const void *)file;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > (size_t)st.st_size)
        return NULL;
    const Elf64_Shdr *sh = (const void *)(file + eh->e_shoff);
    char *names = xalloc(1);
    *size = 0;
    for (int s = 0; s < eh->e_shnum; s++) {
        if (sh[s].sh_type != SHT_DYNSYM || sh[s].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Sym *sym = (const void *)(file + sh[s].sh_offset);
        const char *strings = (const char *)file + sh[sh[s].sh_link].sh_offset;
        for (size_t i = 0; i < sh[s].sh_size / sizeof *sym; i++) {
            if (sym[i].st_shndx != SHN_UNDEF || sym[i].st_name == 0)
                continue;
            const char *name = strings + sym[i].st_name;
            names = realloc(names, *size + strlen(name) + 1);
            if (!names)
                return NULL;
            strcpy(names + *size, name);
            *size += strlen(name) + 1;
        }
    }
    return names;
}

static int check_program(struct spec *spec, const char *program)
{
    size_t size = 0;
    char *imports = imports_of(program, &size);
    if (!imports) {
        fprintf(stderr, "shimgen: %s: not a 64-bit ELF program that can be read\n", program);
        return -1;
    }
    for (int b = 0; b < spec->nblocks; b++) {
        const struct block *block = spec->blocks[b];
        int found = block->is_callback || block->is_after_half;
        for (size_t at = 0; at < size && !found; at += strlen(imports + at) + 1)
            found = strcmp(imports + at, block->symbol) == 0;
        if (!found)
            spec_error(spec, block->line,
                       "%s does not import %s: none of its calls would reach the wrapper", program,
                       block->symbol);
    }
    return 0;
}

/* Returns the number of mistakes, -1 when the program cannot be read. */
int check_libraries(struct spec *spec, const char *program)
{
    struct library libs[2 * MAX_LIBRARIES];
    int n = 0, before = spec->errors;
    for (int i = 0; i < spec->nlibraries; i++)
        n += open_library(spec, spec->libraries[i].line, spec->libraries[i].text, &libs[n]);
    for (int i = 0; i < spec->npkgs; i++)
        n += open_pkg(spec, &spec->pkgs[i], &libs[n], 2 * MAX_LIBRARIES - n);
    if (n > 0 && spec->errors == before) /* one missing library would make every name missing */
        check_defined(spec, libs, n);
    if (program && check_program(spec, program) < 0)
        return -1;
    return spec->errors;
}
