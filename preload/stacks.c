/* Call stacks on the event kinds ACTORTRACE_STACKS names (docs/STACKS.md).
 *
 * Recording side (any thread, signal handlers): unw_backtrace, then the frames' hash finds or
 * claims an entry of one process-wide table with a single CAS; the entry's index is the stack's
 * id, recorded as an event of the registered kind "stack" just before the event it belongs to.
 * No lock, no allocation. A capture that a signal handler starts while the same thread is
 * inside one is skipped, and so is one that finds the table full: its companion has id 0. A
 * capture in a handler stops where the signal was delivered (handler_walk).
 *
 * Writer side (at__stacks_publish): each new entry is symbolized (module by dl_iterate_phdr at
 * that moment, function from the module file's .symtab, else .dynsym) and queued as MODULE and
 * STACK metadata records, so a trace reads as names on a machine without the binaries. A
 * module that defines a function this library wraps is marked as a runtime's library, so that
 * a reader can tell the code that called the runtime from the runtime itself. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "at_codec.h"
#include "at_vectors.h"
#include "config.h"
#include "meta.h"
#include "stackroom.h"
#include "stacks.h"

uint64_t at__stack_kinds;

#define TABLE_SIZE     4096 /* distinct stacks one process keeps; a power of two */
#define PROBES         64
#define OWN_FRAMES_MAX 8   /* frames of this library (capture, wrapper, helpers) above the caller */
#define FUNC_MAX       256 /* longer function names are cut */

enum entry_state { ENTRY_FILLING = 0, ENTRY_READY = 1, ENTRY_PUBLISHED = 2 };

struct stack_entry {
    uint64_t hash;  /* 0: free; claimed once by a CAS, then never changes */
    uint32_t state; /* enum entry_state: READY stored with release once pc[] is complete */
    uint32_t depth;
    uintptr_t pc[AT_STACK_DEPTH_MAX];
};

static struct stack_entry table[TABLE_SIZE];
static uint32_t unpublished; /* set when an entry became READY; atomic */
static unsigned stack_kind;  /* the registered kind of the companion events */
/* This library's mapping and libunwind's: their frames are left out. */
static struct {
    uintptr_t lo, hi;
} own[2];
/* libunwind, loaded RTLD_LOCAL: its shared library also exports _Unwind_* and backtrace, which
 * must not take over the program's C++ exceptions or glibc's backtrace. */
static int (*real_unw_backtrace)(void **, int);

static __thread struct {
    uint32_t busy; /* a capture runs on this thread: a handler that interrupts it skips */
    uint32_t tick; /* events of a captured kind, for ACTORTRACE_STACK_EVERY */
} stack_self __attribute__((tls_model("initial-exec")));

static uint64_t hash_frames(const uintptr_t *pc, unsigned n)
{
    uint64_t h = n;
    for (unsigned i = 0; i < n; i++) {
        h = (h ^ pc[i]) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return h | 1; /* 0 marks a free entry */
}

/* The id of the stack pc[0..n), adding it when new; 0 when the table is full around it. A
 * 64-bit hash match is taken as the same stack. */
static uint32_t intern(const uintptr_t *pc, unsigned n)
{
    uint64_t h = hash_frames(pc, n);
    for (unsigned i = 0; i < PROBES; i++) {
        uint32_t index = (uint32_t)(h + i) & (TABLE_SIZE - 1);
        struct stack_entry *e = &table[index];
        /* acquire: pairs with the CAS below on another thread (an entry's hash is set once) */
        uint64_t seen = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        /* acq_rel: one thread claims the free entry; the others see its hash */
        if (seen == 0 && __atomic_compare_exchange_n(&e->hash, &seen, h, 0, __ATOMIC_ACQ_REL,
                                                     __ATOMIC_ACQUIRE)) {
            memcpy(e->pc, pc, n * sizeof *pc);
            e->depth = n;
            /* release: pairs with at__stacks_publish's acquire load: pc and depth are written */
            __atomic_store_n(&e->state, ENTRY_READY, __ATOMIC_RELEASE);
            /* release: pairs with at__stacks_publish's exchange */
            __atomic_store_n(&unpublished, 1, __ATOMIC_RELEASE);
            return index + 1;
        }
        if (seen == h)
            return index + 1;
    }
    return 0;
}

static int own_frame(uintptr_t pc)
{
    return (pc >= own[0].lo && pc < own[0].hi) || (pc >= own[1].lo && pc < own[1].hi);
}

/* Bounds of signals.c's call_program, set by the linker. */
extern const char __start_at_signal_call[] __attribute__((visibility("hidden")));
extern const char __stop_at_signal_call[] __attribute__((visibility("hidden")));

#define HANDLER_STEP 4 /* frames a handler's walk grows by; see handler_walk */

/* The frames of a signal handler's stack, down to the one that delivered the signal and
 * without it: the frames the signal interrupted did not call the handler, and a walk through
 * them can outlast the signal's period. libunwind follows a frame it cannot cache (a CFA given
 * as an expression, a dynamic linker's trampoline) through its slow path, which starts the
 * whole walk over at about two system calls a frame (1 us here): at the deepest stacks, 40 us
 * a capture, and a SIGALRM every 20 us left the program no time to run
 * (tests/e2e/stacks.sh, "expression").
 *
 * A walk of size k looks up the k innermost frames, the last to find its caller's address.
 * The delivery frame (call_program) is found at index h by any k > h; below it lie
 * signals.c's on_signal and the kernel's signal frame, which the fast path follows, and only
 * then the interrupted frame: k <= h + 4 never looks that one up. So each try grows by
 * HANDLER_STEP = 4 from 4: a try that misses the delivery had k <= h, and the next one has
 * k + 4 <= h + 4. Most handlers are found by the first or second try. */
static int handler_walk(void **pc, int most)
{
    uintptr_t lo = (uintptr_t)__start_at_signal_call, size = (uintptr_t)__stop_at_signal_call - lo;
    for (int k = HANDLER_STEP;; k += HANDLER_STEP) {
        if (k > most)
            k = most;
        int n = real_unw_backtrace(pc, k);
        for (int i = 0; i < n; i++)
            if ((uintptr_t)pc[i] - lo < size)
                return i;
        if (n < k || k == most)
            return n;
    }
}

/* The id of the calling thread's stack, without the recorder's own frames; 0 when it does not
 * fit the table. */
static uint32_t capture(void)
{
    void *pc[AT_STACK_DEPTH_MAX + OWN_FRAMES_MAX];
    int most = (int)at__config.stack_depth + OWN_FRAMES_MAX;
    int n = at__thread.in_signal ? handler_walk(pc, most) : real_unw_backtrace(pc, most);
    int first = 0;
    while (first < n && own_frame((uintptr_t)pc[first]))
        first++;
    unsigned depth = (unsigned)(n - first);
    if (depth > at__config.stack_depth)
        depth = at__config.stack_depth;
    return depth ? intern((uintptr_t *)pc + first, depth) : 0;
}

uint32_t at__stack_busy(void)
{
    return stack_self.busy;
}

void at__stack_set_busy(uint32_t busy)
{
    stack_self.busy = busy;
}

/* Id 0 in the companion says the capture was skipped: a handler interrupted a capture on this
 * thread (libunwind's per-thread state is in use), the thread has less stack left than a
 * capture needs (AT_CAPTURE_STACK), or the table is full around the stack. */
static void stack_capture(unsigned kind, uint64_t actor)
{
    uint32_t id = 0;
    if (!stack_self.busy) {
        if (at__config.stack_every > 1 && stack_self.tick++ % at__config.stack_every)
            return;
        if (!at__thread.in_signal)
            at__stack_room_learn();
        if (at__stack_room() >= AT_CAPTURE_STACK) {
            stack_self.busy = 1;
            id = capture();
            stack_self.busy = 0;
        }
    }
    at_record(stack_kind, actor, 0, id, kind, 0);
}

/* The caller's vector registers are kept (at_vectors.h): it may be a patched entry's wrapper. */
AT_EXPORT AT_GENERAL_REGS_ONLY void at__stack_capture(unsigned kind, uint64_t actor)
{
    AT_VECTORS_KEPT(stack_capture(kind, actor));
}

/* ---- Symbolization, on the writer thread ---- */

struct module {
    uintptr_t base; /* dlpi_addr: the module's addresses are pc - base */
    char path[PATH_MAX];
    char build_id[41];
    int program; /* the main program, which is never marked as a runtime */
};

/* Modules published so far in this trace; their index + 1 is their id. Writer only. */
#define MODULES_MAX 512
static struct module modules[MODULES_MAX];
static unsigned nmodules;

struct lookup {
    uintptr_t pc;
    int found;
    struct module m;
};

static void note_build_id(const char *p, size_t size, char out[41])
{
    const char *end = p + size;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        const char *desc = p + sizeof *n + ((n->n_namesz + 3) & ~3u);
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
            memcmp(p + sizeof *n, "GNU", 4) == 0) {
            unsigned len = n->n_descsz < 20 ? n->n_descsz : 20;
            for (unsigned i = 0; i < len; i++) {
                out[2 * i] = "0123456789abcdef"[(uint8_t)desc[i] >> 4];
                out[2 * i + 1] = "0123456789abcdef"[(uint8_t)desc[i] & 15];
            }
            out[2 * len] = '\0';
            return;
        }
        p = desc + ((n->n_descsz + 3) & ~3u);
    }
}

static int contains(const struct dl_phdr_info *info, uintptr_t pc)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && pc >= start && pc - start < ph->p_memsz)
            return 1;
    }
    return 0;
}

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct lookup *l = arg;
    if (!contains(info, l->pc))
        return 0;
    l->found = 1;
    l->m.base = info->dlpi_addr;
    const char *name = info->dlpi_name;
    if (name && name[0])
        snprintf(l->m.path, sizeof l->m.path, "%s", name);
    else { /* the main program */
        ssize_t n = readlink("/proc/self/exe", l->m.path, sizeof l->m.path - 1);
        l->m.path[n > 0 ? n : 0] = '\0';
        l->m.program = 1;
    }
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            note_build_id((const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
                          info->dlpi_phdr[i].p_memsz, l->m.build_id);
    return 1;
}

static size_t put_str(uint8_t *p, const char *s)
{
    size_t len = strlen(s), n = at_varint_put(p, len);
    memcpy(p + n, s, len);
    return n + len;
}

static int publish_finishing; /* at__stacks_publish's argument; writer only */
static int wraps_any(const char *path);

/* Queues a record of type with body[0..len). */
static void queue(unsigned type, const uint8_t *body, size_t len)
{
    static uint8_t record[1 + AT_VARINT_MAX + AT_STACK_DEPTH_MAX * (FUNC_MAX + 4 * AT_VARINT_MAX) +
                          2 * AT_VARINT_MAX + 2 * PATH_MAX];
    record[0] = (uint8_t)type;
    size_t n = 1 + at_varint_put(record + 1, len);
    memcpy(record + n, body, len);
    /* At the end, a thread stopped for good may hold the lock. A record that cannot be queued
     * leaves its events without a stack. */
    at__meta_append_raw(record, n + len, 100 * 1000 * 1000, !publish_finishing);
}

/* The id of the module l found, publishing it when new. */
static uint32_t module_id(const struct module *m)
{
    for (unsigned i = 0; i < nmodules; i++)
        if (modules[i].base == m->base && strcmp(modules[i].path, m->path) == 0)
            return i + 1;
    if (nmodules == MODULES_MAX)
        return 0;
    modules[nmodules++] = *m;
    uint8_t body[2 * PATH_MAX + AT_VARINT_MAX];
    size_t len = at_varint_put(body, nmodules);
    len += put_str(body + len, m->path);
    len += put_str(body + len, m->build_id);
    len += at_varint_put(body + len, !m->program && wraps_any(m->path));
    queue(AT_META_MODULE, body, len);
    return nmodules;
}

/* The module file, mapped for reading symbols; kept while consecutive lookups use it. */
static struct {
    char path[PATH_MAX];
    const uint8_t *data;
    size_t size;
} image;

static int map_image(const char *path)
{
    if (image.data && strcmp(image.path, path) == 0)
        return 0;
    if (image.data)
        munmap((void *)image.data, image.size);
    image.data = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        return -1;
    image.data = data;
    image.size = (size_t)st.st_size;
    snprintf(image.path, sizeof image.path, "%s", path);
    return 0;
}

/* The section headers of the mapped image, or NULL when it is not a sound ELF64 file. */
static const ElfW(Shdr) * sections(unsigned *count)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)image.data;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shoff > image.size ||
        (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > image.size - eh->e_shoff)
        return NULL;
    *count = eh->e_shnum;
    return (const ElfW(Shdr) *)(image.data + eh->e_shoff);
}

/* Searches one symbol table for the function holding addr; 1 when found. */
static int search_symbols(const ElfW(Shdr) * sh, unsigned nsh, const ElfW(Shdr) * symtab,
                          uintptr_t addr, char *func, uintptr_t *start)
{
    if (symtab->sh_link >= nsh || symtab->sh_offset > image.size ||
        symtab->sh_size > image.size - symtab->sh_offset)
        return 0;
    const ElfW(Shdr) *strtab = &sh[symtab->sh_link];
    if (strtab->sh_offset > image.size || strtab->sh_size > image.size - strtab->sh_offset)
        return 0;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)(image.data + symtab->sh_offset);
    const char *names = (const char *)image.data + strtab->sh_offset;
    for (size_t i = 0; i < symtab->sh_size / sizeof *sym; i++) {
        unsigned type = ELF64_ST_TYPE(sym[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[i].st_shndx == SHN_UNDEF ||
            addr < sym[i].st_value || addr - sym[i].st_value >= sym[i].st_size ||
            sym[i].st_name >= strtab->sh_size)
            continue;
        snprintf(func, FUNC_MAX, "%.*s",
                 (int)strnlen(names + sym[i].st_name, strtab->sh_size - sym[i].st_name),
                 names + sym[i].st_name);
        *start = sym[i].st_value;
        return 1;
    }
    return 0;
}

/* The function of the module file at path that holds addr: .symtab first (static functions
 * too), else .dynsym. func is "" when none does. */
static void function_at(const char *path, uintptr_t addr, char *func, uintptr_t *start)
{
    func[0] = '\0';
    unsigned nsh;
    const ElfW(Shdr) * sh;
    if (map_image(path) < 0 || !(sh = sections(&nsh)))
        return;
    for (unsigned want = SHT_SYMTAB;; want = SHT_DYNSYM) {
        for (unsigned i = 0; i < nsh; i++)
            if (sh[i].sh_type == want && search_symbols(sh, nsh, &sh[i], addr, func, start))
                return;
        if (want == SHT_DYNSYM)
            return;
    }
}

/* Whether symbol table i of the mapped image defines a function this library wraps: the
 * dynamic linker finds our wrapper for its name. */
static int defines_wrapped(const ElfW(Shdr) * sh, unsigned nsh, unsigned i)
{
    const ElfW(Shdr) *strtab = &sh[sh[i].sh_link < nsh ? sh[i].sh_link : 0];
    if (sh[i].sh_offset > image.size || sh[i].sh_size > image.size - sh[i].sh_offset ||
        strtab->sh_offset > image.size || strtab->sh_size > image.size - strtab->sh_offset)
        return 0;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)(image.data + sh[i].sh_offset);
    const char *names = (const char *)image.data + strtab->sh_offset;
    for (size_t j = 0; j < sh[i].sh_size / sizeof *sym; j++) {
        uintptr_t found;
        if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC || sym[j].st_shndx == SHN_UNDEF ||
            sym[j].st_name >= strtab->sh_size ||
            !memchr(names + sym[j].st_name, '\0', strtab->sh_size - sym[j].st_name))
            continue;
        found = (uintptr_t)dlsym(RTLD_DEFAULT, names + sym[j].st_name);
        if (found >= own[0].lo && found < own[0].hi)
            return 1;
    }
    return 0;
}

/* Whether the module file at path is a runtime's library: its .dynsym defines a function this
 * library wraps. */
static int wraps_any(const char *path)
{
    unsigned nsh;
    const ElfW(Shdr) * sh;
    if (map_image(path) < 0 || !(sh = sections(&nsh)))
        return 0;
    for (unsigned i = 0; i < nsh; i++)
        if (sh[i].sh_type == SHT_DYNSYM && defines_wrapped(sh, nsh, i))
            return 1;
    return 0;
}

/* Appends one frame (module id, address, function, offset) to body at p. */
static size_t put_frame(uint8_t *p, uintptr_t pc)
{
    struct lookup l = {.pc = pc};
    dl_iterate_phdr(find_module, &l);
    char func[FUNC_MAX] = "";
    uintptr_t addr = pc, start = 0;
    uint32_t module = 0;
    if (l.found) {
        module = module_id(&l.m);
        addr = pc - l.m.base;
        /* pc is a return address: the call is the byte before it */
        function_at(l.m.path, addr - 1, func, &start);
    }
    size_t n = at_varint_put(p, module);
    n += at_varint_put(p + n, addr);
    n += put_str(p + n, func);
    n += at_varint_put(p + n, func[0] ? addr - start : 0);
    return n;
}

static void publish(uint32_t id, const struct stack_entry *e)
{
    static uint8_t body[2 * AT_VARINT_MAX + AT_STACK_DEPTH_MAX * (FUNC_MAX + 4 * AT_VARINT_MAX)];
    size_t len = at_varint_put(body, id);
    len += at_varint_put(body + len, e->depth);
    for (uint32_t i = 0; i < e->depth; i++)
        len += put_frame(body + len, e->pc[i]);
    queue(AT_META_STACK, body, len);
}

void at__stacks_publish(int finishing)
{
    /* acq_rel: pairs with intern's release store of unpublished */
    if (!__atomic_exchange_n(&unpublished, 0, __ATOMIC_ACQ_REL))
        return;
    publish_finishing = finishing;
    for (uint32_t i = 0; i < TABLE_SIZE; i++) {
        struct stack_entry *e = &table[i];
        /* acquire: pairs with intern's release store of ENTRY_READY */
        if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != ENTRY_READY)
            continue;
        publish(i + 1, e);
        e->state = ENTRY_PUBLISHED;
    }
    if (image.data) /* a dlclose'd library's file may go: do not keep it mapped */
        munmap((void *)image.data, image.size);
    image.data = NULL;
}

/* A forked child writes its own trace: every stack and module is published again there. */
static void stacks_after_fork(void)
{
    nmodules = 0;
    for (uint32_t i = 0; i < TABLE_SIZE; i++)
        if (table[i].state == ENTRY_PUBLISHED)
            table[i].state = ENTRY_READY;
    unpublished = 1;
}

struct own_search {
    uintptr_t pc;
    unsigned which;
};

/* Sets own[which] to the span of the module holding pc. */
static int find_own(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct own_search *s = arg;
    if (!contains(info, s->pc))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD)
            continue;
        if (own[s->which].lo == 0 || start < own[s->which].lo)
            own[s->which].lo = start;
        if (start + ph->p_memsz > own[s->which].hi)
            own[s->which].hi = start + ph->p_memsz;
    }
    return 1;
}

#define AT_STR(x)  AT_STR_(x)
#define AT_STR_(x) #x

/* Through the library's own dlopen (patch_dlopen.c), as the program's calls go: libunwind and
 * what it loads are then scanned for functions to patch, as every object loaded after the
 * start is (patching starts first: lifecycle.c's constructor). */
static int load_libunwind(void)
{
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !(real_unw_backtrace = dlsym(lib, "unw_backtrace"))) {
        at__warn("ACTORTRACE_STACKS: cannot load libunwind.so.8; no stacks");
        return -ENOENT;
    }
    int (*policy)(unw_addr_space_t, unw_caching_policy_t) =
        dlsym(lib, AT_STR(unw_set_caching_policy));
    unw_addr_space_t *space = dlsym(lib, AT_STR(unw_local_addr_space));
    /* per-thread caches: no lock that a signal handler could find held */
    if (policy && space)
        policy(*space, UNW_CACHE_PER_THREAD);
    return 0;
}

/* Stacks stay off when any of it fails. */
void at__stacks_init(void)
{
    at__config_stacks();
    if (!at__config.stack_kinds || load_libunwind() < 0 ||
        !(stack_kind = at_event_register("stack")))
        return;
    struct own_search self = {(uintptr_t)&at__stack_capture, 0};
    struct own_search unwinder = {(uintptr_t)real_unw_backtrace, 1};
    dl_iterate_phdr(find_own, &self);
    dl_iterate_phdr(find_own, &unwinder);
    pthread_atfork(NULL, NULL, stacks_after_fork);
    /* release: at_record reads it plainly; this only orders the setup above before it */
    __atomic_store_n(&at__stack_kinds, at__config.stack_kinds, __ATOMIC_RELEASE);
}
