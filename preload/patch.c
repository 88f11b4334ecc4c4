/* Entry patching at start: the calls LD_PRELOAD cannot see. A runtime linked into the program
 * (a static archive) or a library whose own calls are direct (-Bsymbolic-functions, hidden
 * aliases) reaches its functions without the PLT, so the wrappers never run. Before main, each
 * function a shim declares patchable (AT_PATCH_TABLE) is looked up in
 * every loaded object's symbol table (.symtab from its file, else .dynsym); where that object
 * defines it and calls its own functions directly (it imports none of them through a PLT or
 * GOT slot: the program itself, a library built -Bsymbolic-functions that has a direct call to
 * one), its entry is overwritten with a jump to our wrapper (patch_x86.c, through the stubs of
 * patch_stubs.c that keep the caller's registers), and the wrapper's real_<symbol> becomes the
 * trampoline to the original. What is patched and what is refused
 * goes into the trace (PATCH records); a refusal is also said once on stderr. Objects dlopen
 * loads are patched before it returns (patch_dlopen.c). ACTORTRACE_PATCH=0 turns it off. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "patch.h"
#include "meta.h"
#include "util.h"

/* The shims' tables, gathered by the linker into one section (none: both NULL). */
extern struct at_patchable __start_at_patchable[] __attribute__((weak, visibility("hidden")));
extern struct at_patchable __stop_at_patchable[] __attribute__((weak, visibility("hidden")));

/* An object's file, mapped to read its section headers and symbols. */
struct elf_file {
    const uint8_t *data;
    size_t size;
    const Elf64_Shdr *sections;
    unsigned nsections;
};

/* One loaded object, as dl_iterate_phdr describes it. */
struct object {
    const char *path;
    uintptr_t base;
    const Elf64_Phdr *phdrs;
    unsigned nphdrs;
    uint64_t path_hash; /* path_hash(path): with base, what seen[] knows it by */
};

/* Patching runs in the constructor and in dlopen, under patch_mutex. */
static pthread_mutex_t patch_mutex = PTHREAD_MUTEX_INITIALIZER;
static int patching;  /* on: a shim declares patchable functions, ACTORTRACE_PATCH is not 0 */
static int stub_only; /* ACTORTRACE_PATCH=stub: no entry goes to its wrapper directly */
static void *self;    /* this library, kept open: dlsym on it finds the wrappers */
static const char *self_path;
static char exe_path[PATH_MAX];
static int exe_stripped; /* the executable has no .symtab and exports no function in .dynsym:
                          * what it links in cannot be found */
#define MAX_OBJECTS 4096
/* The objects visited, by load address and a hash of their path: another object may be loaded
 * at a freed address on one thread before the dlclose that freed it, on another, has told the
 * patching (at__patch_forget_unloaded). */
static struct seen_object {
    uintptr_t base;
    uint64_t path;
} seen[MAX_OBJECTS];
static unsigned nseen;

/* FNV-1a of an object's path. */
static uint64_t path_hash(const char *path)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *path; path++)
        h = (h ^ (uint8_t)*path) * 0x100000001b3ull;
    return h;
}

static int same_object(const struct seen_object *s, uintptr_t base, uint64_t path)
{
    return s->base == base && s->path == path;
}

static int elf_open(struct elf_file *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    void *p = fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(Elf64_Ehdr)
                  ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    const Elf64_Ehdr *eh = p;
    *f = (struct elf_file){p, (size_t)st.st_size, NULL, 0};
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > f->size) {
        munmap(p, f->size);
        return -1;
    }
    f->sections = (const Elf64_Shdr *)(f->data + eh->e_shoff);
    f->nsections = eh->e_shnum;
    return 0;
}

/* The first section of `type`, NULL when there is none or it lies outside the file. */
static const Elf64_Shdr *elf_section(const struct elf_file *f, uint32_t type)
{
    for (unsigned i = 0; i < f->nsections; i++) {
        const Elf64_Shdr *s = &f->sections[i];
        if (s->sh_type == type && s->sh_link < f->nsections && s->sh_offset + s->sh_size <= f->size)
            return s;
    }
    return NULL;
}

/* Symbol `i` of symbol section `symtab`, and its name (NULL when out of the file). */
static const char *elf_symbol(const struct elf_file *f, const Elf64_Shdr *symtab, size_t i,
                              const Elf64_Sym **sym)
{
    if (symtab->sh_link >= f->nsections || (i + 1) * sizeof(Elf64_Sym) > symtab->sh_size)
        return NULL;
    const Elf64_Shdr *strtab = &f->sections[symtab->sh_link];
    if (strtab->sh_offset + strtab->sh_size > f->size)
        return NULL;
    *sym = (const Elf64_Sym *)(f->data + symtab->sh_offset) + i;
    const char *name = (const char *)f->data + strtab->sh_offset + (*sym)->st_name;
    if ((*sym)->st_name >= strtab->sh_size ||
        !memchr(name, 0, strtab->sh_size - (*sym)->st_name)) /* the name ends in its table */
        return NULL;
    return name;
}

/* 1 when the object's own calls to `name` go through a PLT or GOT slot (a dynamic relocation
 * names it), so they already reach the wrapper. */
static int elf_imports(const struct elf_file *f, const char *name)
{
    for (unsigned i = 0; i < f->nsections; i++) {
        const Elf64_Shdr *rel = &f->sections[i];
        if (rel->sh_type != SHT_RELA || rel->sh_link >= f->nsections ||
            f->sections[rel->sh_link].sh_type != SHT_DYNSYM ||
            rel->sh_offset + rel->sh_size > f->size)
            continue;
        const Elf64_Rela *r = (const Elf64_Rela *)(f->data + rel->sh_offset);
        for (size_t j = 0; j < rel->sh_size / sizeof *r; j++) {
            const Elf64_Sym *sym;
            uint32_t type = ELF64_R_TYPE(r[j].r_info);
            const char *s =
                type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT
                    ? elf_symbol(f, &f->sections[rel->sh_link], ELF64_R_SYM(r[j].r_info), &sym)
                    : NULL;
            if (s && strcmp(s, name) == 0)
                return 1;
        }
    }
    return 0;
}

/* The protection of the loaded segment holding addr. */
static int segment_prot(const struct object *o, uintptr_t addr)
{
    for (unsigned i = 0; i < o->nphdrs; i++) {
        const Elf64_Phdr *ph = &o->phdrs[i];
        if (ph->p_type == PT_LOAD && addr >= o->base + ph->p_vaddr &&
            addr < o->base + ph->p_vaddr + ph->p_memsz)
            return (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0) |
                   (ph->p_flags & PF_X ? PROT_EXEC : 0);
    }
    return PROT_READ | PROT_EXEC;
}

static int by_symbol(const void *a, const void *b)
{
    return strcmp(((const struct at_patchable *)a)->symbol,
                  ((const struct at_patchable *)b)->symbol);
}

/* The declaration of `name`, NULL when none: a binary search of the tables, sorted by symbol
 * at start, since every symbol of every object is looked up. */
static struct at_patchable *declared(const char *name)
{
    struct at_patchable key = {.symbol = name};
    return bsearch(&key, __start_at_patchable, (size_t)(__stop_at_patchable - __start_at_patchable),
                   sizeof key, by_symbol);
}

/* Says what happened to one function: a PATCH record for the trace, and a line on stderr for
 * a refusal. */
/* A patched function's record says how its calls reach the wrapper: "direct", or "" through
 * the stub that keeps the caller's registers. */
static void report(const struct at_patchable *d, const struct object *o, const char *why,
                   int direct)
{
    at__meta_patch(why ? AT_PATCH_REFUSED : AT_PATCH_DONE, d->symbol, o->path,
                   why      ? why
                   : direct ? "direct"
                            : "");
    if (why)
        at__warn("not patching %s in %s: %s; its calls from inside that object are not traced",
                 d->symbol, o->path, why);
}

/* The entries patched, by address: two declared names at one address (an alias, or code the
 * linker folded) are patched once, under the first. With the object's load address, so that
 * an object's entries are forgotten when it is unloaded. */
#define MAX_PATCHED 4096
static struct {
    uintptr_t entry, base;
    uint64_t path; /* as in seen[] */
    struct at_patchable *declared;
} patched[MAX_PATCHED];
static unsigned npatched;

static const char *patched_as(uintptr_t entry)
{
    for (unsigned i = 0; i < npatched; i++)
        if (patched[i].entry == entry)
            return patched[i].declared->symbol;
    return NULL;
}

/* A declared function an object defines, while the object is patched. */
struct candidate {
    struct at_patchable *declared;
    const Elf64_Sym *sym;
    uintptr_t entry, end, foreign; /* foreign: as at_patch's */
};

static int by_entry(const void *a, const void *b)
{
    uintptr_t x = ((const struct candidate *)a)->entry, y = ((const struct candidate *)b)->entry;
    return (x > y) - (x < y);
}

/* Sets each candidate's `foreign`: the lowest address in (entry, entry + AT_PATCH_WINDOW) that a
 * direct jump or call with a 32-bit displacement (e8, e9, 0f 80-8f) from outside the function
 * goes to. GCC moves a function's rare paths into a part of their own (name.cold, which a
 * stripped object does not name), which may jump back to just past the entry; the jump written
 * there would cut such a target in two. The object's code is read byte by byte, not decoded,
 * so bytes that only look like a jump can refuse a function, never let one through. c[0..n)
 * is sorted by entry. */
static void find_foreign_jumps(const struct object *o, struct candidate *c, unsigned n)
{
    for (unsigned i = 0; i < o->nphdrs; i++) {
        const Elf64_Phdr *ph = &o->phdrs[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        const uint8_t *code = (const uint8_t *)(o->base + ph->p_vaddr);
        for (size_t at = 0; at + 6 <= ph->p_filesz; at++) {
            size_t len = code[at] == 0xe8 || code[at] == 0xe9                ? 5
                         : code[at] == 0x0f && (code[at + 1] & 0xf0) == 0x80 ? 6
                                                                             : 0;
            if (len == 0)
                continue;
            int32_t rel;
            memcpy(&rel, code + at + len - 4, sizeof rel);
            uintptr_t from = (uintptr_t)(code + at), to = from + len + (uintptr_t)(intptr_t)rel;
            unsigned lo = 0, hi = n; /* the first candidate whose entry is at or past `to` */
            while (lo < hi) {
                unsigned mid = (lo + hi) / 2;
                if (c[mid].entry < to)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            struct candidate *k = lo > 0 ? &c[lo - 1] : NULL; /* the last entry before `to` */
            if (k && to - k->entry < AT_PATCH_WINDOW && (from < k->entry || from >= k->end) &&
                (!k->foreign || to < k->foreign))
                k->foreign = to;
        }
    }
}

static void patch_one(struct at_patchable *d, const struct object *o, const Elf64_Sym *sym,
                      uintptr_t foreign)
{
    struct at_patch p = {.entry = o->base + sym->st_value,
                         .size = sym->st_size,
                         .foreign = foreign,
                         .real = d->real};
    p.wrapper = d->wrapper;
    p.returns = d->returns;
    p.prot = segment_prot(o, p.entry);
    p.stub_only = stub_only;
    const char *same = patched_as(p.entry);
    if (d->patched_in) {
        report(d, o, "already patched in another object", 0);
        return;
    }
    if (same) { /* in the trace, not on stderr: its calls are traced, under the other name */
        snprintf(p.why, sizeof p.why, "its code is %s's, patched under that name", same);
        at__meta_patch(AT_PATCH_REFUSED, d->symbol, o->path, p.why);
        return;
    }
    if (!p.wrapper || p.wrapper == (void *)p.entry)
        return;
    if (at__patch_entry(&p) < 0) {
        report(d, o, p.why, 0);
        return;
    }
    d->patched_in = o->path;
    if (npatched < MAX_PATCHED)
        patched[npatched++] = (typeof(patched[0])){p.entry, o->base, o->path_hash, d};
    report(d, o, NULL, p.direct);
}

/* 1 when object o imports one of the declared functions it defines: its own calls to its
 * exported functions go through its PLT (the default for a shared library), so they all reach
 * the wrappers already. A library built with -Bsymbolic-functions, or the program itself,
 * imports none and calls them directly. */
static int calls_through_plt(const struct elf_file *f, const Elf64_Shdr *symtab)
{
    for (size_t i = 0; symtab && i < symtab->sh_size / sizeof(Elf64_Sym); i++) {
        const Elf64_Sym *sym;
        const char *name = elf_symbol(f, symtab, i, &sym);
        if (name && sym->st_shndx != SHN_UNDEF && declared(name) && elf_imports(f, name))
            return 1;
    }
    return 0;
}

/* 1 when one of the object's executable segments holds a call or jump (e8 / e9 rel32) to one
 * of the n entries. */
static int calls_any(const struct object *o, const uintptr_t *entries, unsigned n)
{
    for (unsigned i = 0; i < o->nphdrs; i++) {
        const Elf64_Phdr *ph = &o->phdrs[i];
        const uint8_t *code = (const uint8_t *)(o->base + ph->p_vaddr);
        for (size_t at = 0; ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && at + 5 <= ph->p_filesz;
             at++) {
            int32_t rel;
            memcpy(&rel, code + at + 1, sizeof rel);
            for (unsigned e = 0; (code[at] | 1) == 0xe9 && e < n; e++)
                if ((uintptr_t)(code + at + 5) + (uintptr_t)(intptr_t)rel == entries[e])
                    return 1;
        }
    }
    return 0;
}

/* 1 when the shared object o calls one of the declared functions it defines directly (built
 * -Bsymbolic-functions, say): a library that only defines them, without calling them, has
 * nothing worth patching, and may not be the runtime at all. */
static int calls_directly(const struct object *o, const struct elf_file *f,
                          const Elf64_Shdr *symtab)
{
    uintptr_t entries[64];
    unsigned n = 0;
    for (size_t i = 0; symtab && n < 64 && i < symtab->sh_size / sizeof(Elf64_Sym); i++) {
        const Elf64_Sym *sym;
        const char *name = elf_symbol(f, symtab, i, &sym);
        if (name && sym->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
            declared(name))
            entries[n++] = o->base + sym->st_value;
    }
    return n > 0 && calls_any(o, entries, n); /* most objects define none: no scan */
}

/* The file's fullest symbol table: .symtab, else .dynsym (NULL when it has neither). */
static const Elf64_Shdr *elf_symbols(const struct elf_file *f)
{
    const Elf64_Shdr *symtab = elf_section(f, SHT_SYMTAB);
    return symtab ? symtab : elf_section(f, SHT_DYNSYM);
}

/* 1 for a program the system installed (/usr/bin, ...): distributions strip them, no actor
 * runtime is linked into them, and a traced program's children (a shell, a tool) are often
 * them, so their being stripped is not worth a line. */
static int system_program(const char *path)
{
    static const char *const dirs[] = {"/usr/bin/", "/bin/",         "/usr/sbin/",
                                       "/sbin/",    "/usr/libexec/", "/usr/lib/"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (strncmp(path, dirs[i], strlen(dirs[i])) == 0)
            return 1;
    return 0;
}

/* 1 when symbol section `symtab` (NULL: none) defines a function. */
static int defines_functions(const struct elf_file *f, const Elf64_Shdr *symtab)
{
    for (size_t i = 0; symtab && i < symtab->sh_size / sizeof(Elf64_Sym); i++) {
        const Elf64_Sym *sym;
        if (elf_symbol(f, symtab, i, &sym) && sym->st_shndx != SHN_UNDEF &&
            ELF64_ST_TYPE(sym->st_info) == STT_FUNC)
            return 1;
    }
    return 0;
}

/* Patches the declared functions object o defines, unless it reaches them through its PLT. */
static void patch_object(const struct object *o)
{
    struct elf_file f;
    if (elf_open(&f, o->path) < 0)
        return;
    if (o->path == exe_path && !elf_section(&f, SHT_SYMTAB) && !system_program(o->path) &&
        !defines_functions(&f, elf_section(&f, SHT_DYNSYM)))
        exe_stripped = 1; /* a stripped program that exports functions (beam.smp) is patched */
    const Elf64_Shdr *symtab = elf_symbols(&f);
    size_t nsyms = symtab && !calls_through_plt(&f, symtab) &&
                           (o->path == exe_path || calls_directly(o, &f, symtab))
                       ? symtab->sh_size / sizeof(Elf64_Sym)
                       : 0;
    struct candidate c[__stop_at_patchable - __start_at_patchable + 1];
    unsigned n = 0;
    for (size_t i = 0; i < nsyms && n < sizeof c / sizeof c[0]; i++) {
        const Elf64_Sym *sym;
        const char *name = elf_symbol(&f, symtab, i, &sym);
        struct at_patchable *d = name ? declared(name) : NULL;
        if (d && ELF64_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_shndx != SHN_UNDEF &&
            ELF64_ST_BIND(sym->st_info) != STB_LOCAL)
            c[n++] = (struct candidate){d, sym, o->base + sym->st_value,
                                        o->base + sym->st_value + sym->st_size, 0};
    }
    if (n > 0) {
        qsort(c, n, sizeof c[0], by_entry);
        find_foreign_jumps(o, c, n);
    }
    for (unsigned i = 0; i < n; i++)
        patch_one(c[i].declared, o, c[i].sym, c[i].foreign);
    munmap((void *)f.data, f.size);
}

int at__patch_defines(void **real, const char *symbol)
{
    struct at_patchable *d = __start_at_patchable;
    while (d < __stop_at_patchable && d->real != real)
        d++;
    struct elf_file f;
    if (d == __stop_at_patchable || !d->patched_in || elf_open(&f, d->patched_in) < 0)
        return 0;
    const Elf64_Shdr *symtab = elf_symbols(&f);
    int found = 0;
    for (size_t i = 0; symtab && !found && i < symtab->sh_size / sizeof(Elf64_Sym); i++) {
        const Elf64_Sym *sym;
        const char *name = elf_symbol(&f, symtab, i, &sym);
        found = name && sym->st_shndx != SHN_UNDEF && strcmp(name, symbol) == 0;
    }
    munmap((void *)f.data, f.size);
    return found;
}

/* 1 the first time the object at `base` with that path is seen (or when too many were seen to
 * remember). */
static int first_visit(uintptr_t base, uint64_t path)
{
    for (unsigned i = 0; i < nseen; i++)
        if (same_object(&seen[i], base, path))
            return 0;
    if (nseen < MAX_OBJECTS)
        seen[nseen++] = (struct seen_object){base, path};
    return 1;
}

/* A loaded object's path: the link map's name, the program's for the program (no name). */
static const char *loaded_path(const struct dl_phdr_info *info)
{
    return info->dlpi_name[0] ? info->dlpi_name : exe_path;
}

static int visit(struct dl_phdr_info *info, size_t size, void *unused)
{
    (void)size, (void)unused;
    const char *path = loaded_path(info);
    struct object o = {path, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, path_hash(path)};
    /* ourselves; the vdso, which has no file, elf_open skips */
    if (first_visit(o.base, o.path_hash) && strcmp(o.path, self_path) != 0)
        patch_object(&o);
    return 0;
}

static int patch_loaded(void)
{
    Dl_info me;
    void *(*open_object)(const char *, int) = at_resolve("dlopen"); /* not a wrapper of it */
    if (!open_object || !dladdr((void *)patch_loaded, &me) || !me.dli_fname)
        return -ENOENT;
    self = open_object(me.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    if (!self || n <= 0)
        return -ENOENT;
    exe_path[n] = 0;
    self_path = me.dli_fname;
    qsort(__start_at_patchable, (size_t)(__stop_at_patchable - __start_at_patchable),
          sizeof *__start_at_patchable, by_symbol);
    /* here, not in visit(): dl_iterate_phdr holds the loader's write lock, and dlsym there
     * takes its load lock, the order a dlopen or dlclose on another thread takes them in
     * reverse */
    for (struct at_patchable *d = __start_at_patchable; d < __stop_at_patchable; d++)
        d->wrapper = dlsym(self, d->symbol);
    at__patch_batch_begin(); /* before main; other threads are safe (patch_x86.c) */
    dl_iterate_phdr(visit, NULL);
    at__patch_batch_end();
    return 0;
}

void at__patch_init(void)
{
    const char *off = getenv("ACTORTRACE_PATCH");
    if (&__start_at_patchable[0] == &__stop_at_patchable[0] || (off && strcmp(off, "0") == 0))
        return;
    stub_only = off && strcmp(off, "stub") == 0;
    pthread_mutex_lock(&patch_mutex);
    patching = patch_loaded() == 0;
    pthread_mutex_unlock(&patch_mutex);
}

/* The load addresses of the objects loaded now, marked in `present` by their index in seen[]. */
static int mark_present(struct dl_phdr_info *info, size_t size, void *present)
{
    (void)size;
    uint64_t path = path_hash(loaded_path(info));
    for (unsigned i = 0; i < nseen; i++)
        if (same_object(&seen[i], info->dlpi_addr, path))
            ((uint8_t *)present)[i] = 1;
    return 0;
}

void at__patch_forget_unloaded(void)
{
    /* acquire: as in at__patch_new_objects */
    if (!__atomic_load_n(&patching, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&patch_mutex);
    static uint8_t present[MAX_OBJECTS]; /* under patch_mutex */
    memset(present, 0, nseen);
    dl_iterate_phdr(mark_present, present);
    unsigned kept = 0;
    for (unsigned i = 0; i < npatched; i++) {
        unsigned s = 0;
        while (s < nseen && !same_object(&seen[s], patched[i].base, patched[i].path))
            s++;
        if (s < nseen && !present[s]) {
            /* its code is gone, and patched_in named its link map's path: a copy loaded again
             * (at this address or another) is patched anew, and real_ is looked up again */
            patched[i].declared->patched_in = NULL;
            __atomic_store_n(patched[i].declared->real, NULL, __ATOMIC_RELEASE);
        } else {
            patched[kept++] = patched[i];
        }
    }
    npatched = kept;
    kept = 0;
    for (unsigned i = 0; i < nseen; i++)
        if (present[i])
            seen[kept++] = seen[i];
    nseen = kept;
    pthread_mutex_unlock(&patch_mutex);
}

void at__patch_new_objects(void)
{
    /* acquire: pairs with nothing but the store under patch_mutex, which the work below takes */
    if (!__atomic_load_n(&patching, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&patch_mutex);
    dl_iterate_phdr(visit, NULL);
    pthread_mutex_unlock(&patch_mutex);
}

/* A stripped program that exports no function and recorded nothing may hold the runtime out of
 * our sight: say so. And the calls that ran untraced, nested too deep for the shadow stack
 * (patch_stubs.c). */
__attribute__((destructor)) static void at_patch_destructor(void)
{
    uint64_t untraced = __atomic_load_n(&at__patch_untraced, __ATOMIC_RELAXED);
    if (untraced)
        at__warn("%llu calls of patched functions, nested deeper than the %u the shadow stack "
                 "holds, ran untraced",
                 (unsigned long long)untraced, AT_PATCH_FRAMES);
    /* acquire: pairs with lifecycle.c's stores of the state; still UNINIT: nothing recorded */
    if (exe_stripped && __atomic_load_n(&at__state, __ATOMIC_ACQUIRE) == AT_STATE_UNINIT)
        at__warn("no event recorded: %s has no symbol table (stripped), so a runtime linked "
                 "into it could not be patched; it ran untraced",
                 exe_path);
}
