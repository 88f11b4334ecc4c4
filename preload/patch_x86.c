/* Entry patching on x86-64: overwrite a function's first instructions with a jump to a wrapper,
 * and build the trampoline that runs those instructions, relocated, and jumps back. Zydis
 * decodes and re-encodes the instructions. Everything here refuses rather than guesses: a
 * function shorter than the jump, a jump back into the bytes the patch replaces, or a first
 * instruction that cannot be re-encoded at the trampoline's address is left as it is.
 *
 * The code lives in chunks mapped within +-2 GiB of the functions, so that the entry needs only
 * a 5-byte jump (to a stub in the chunk that goes on to the wrapper through patch_stubs.c) and
 * RIP-relative operands still reach from the trampoline; where no chunk can be mapped that close
 * the entry gets a 14-byte absolute jump. Other threads may be running patched code meanwhile
 * (threads started before the library's constructor, every thread during a dlopen): a chunk is
 * one memory mapped twice, executable where it runs and writable elsewhere, so that no code is
 * ever made non-executable; a function's page stays executable while the jump is stored, in one
 * aligned store where its bytes allow. Not thread-safe: the caller serializes the calls (patch.c,
 * under its mutex). */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "patch.h"
#include "util.h"

#define NEAR_JUMP_LEN  5  /* jmp rel32 */
#define FAR_JUMP_LEN   14 /* jmp [rip+0]; .quad target */
#define REACH          (0x7fffffffll - CHUNK_SIZE)
#define CHUNK_SIZE     (64u << 10)
#define MAX_CHUNKS     64
#define MAX_DISPLACED  32 /* displaced bytes: at most the far jump plus one instruction */
#define TRAMPOLINE_MAX (MAX_DISPLACED * 2 + 4 * ZYDIS_MAX_INSTRUCTION_LENGTH + FAR_JUMP_LEN)
#define STUB_LEN       11           /* push rax; lea rax, [rip + desc]; jmp [rax + desc.enter] */
#define STUB_MAX       FAR_JUMP_LEN /* room for the stub, or a direct entry's jump */
#define EMIT_MAX       (sizeof(struct at_patch_desc) + STUB_MAX + TRAMPOLINE_MAX)
#ifndef MFD_EXEC
#define MFD_EXEC 0x10u /* Linux 6.3: asked for where a memfd would be made non-executable */
#endif

/* Code memory, handed out from the start; kept for the life of the process. */
struct chunk {
    uint8_t *base;  /* where the code runs: readable and executable, never writable */
    uint8_t *write; /* the same memory, readable and writable: where it is written */
    size_t used;
};

static struct chunk chunks[MAX_CHUNKS];
static unsigned nchunks;
static size_t page_size;

static int64_t distance(uintptr_t a, uintptr_t b)
{
    return (int64_t)(a - b);
}

static int in_reach(uintptr_t from, uintptr_t to)
{
    int64_t d = distance(to, from);
    return d > -REACH && d < REACH;
}

/* Maps the chunk's memory (fd) to run at exactly `hint`; NULL when that range is taken. */
static uint8_t *map_at(int fd, uintptr_t hint)
{
    void *p = mmap((void *)hint, CHUNK_SIZE, PROT_READ | PROT_EXEC,
                   MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    if ((uintptr_t)p != hint) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(p, CHUNK_SIZE);
        return NULL;
    }
    return p;
}

/* The memory of a new chunk: a memfd of CHUNK_SIZE bytes, -1 when it cannot be made. */
static int chunk_memory(void)
{
    int fd = memfd_create("actortrace-code", MFD_CLOEXEC | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) /* a kernel older than MFD_EXEC */
        fd = memfd_create("actortrace-code", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, CHUNK_SIZE) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* A new chunk, run as near `entry` as a few tries find (below first: the gaps under an image
 * are usually free), else anywhere. */
static struct chunk *chunk_new(uintptr_t entry)
{
    int fd = nchunks < MAX_CHUNKS ? chunk_memory() : -1;
    if (fd < 0)
        return NULL;
    uint8_t *base = NULL;
    uintptr_t aligned = entry & ~((uintptr_t)CHUNK_SIZE - 1);
    for (uint64_t d = 1u << 20; !base && d < (1ull << 30); d *= 2) {
        if (aligned > d)
            base = map_at(fd, aligned - d);
        if (!base)
            base = map_at(fd, aligned + d);
    }
    if (!base) {
        void *p = mmap(NULL, CHUNK_SIZE, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
        base = p == MAP_FAILED ? NULL : p;
    }
    void *write =
        base ? mmap(NULL, CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (write == MAP_FAILED) {
        if (base)
            munmap(base, CHUNK_SIZE);
        return NULL;
    }
    chunks[nchunks] = (struct chunk){base, write, 0};
    return &chunks[nchunks++];
}

/* A chunk with room for `len` bytes: one within reach of entry when there is one. */
static struct chunk *chunk_for(uintptr_t entry, size_t len)
{
    for (unsigned i = 0; i < nchunks; i++)
        if (chunks[i].used + len <= CHUNK_SIZE && in_reach(entry, (uintptr_t)chunks[i].base))
            return &chunks[i];
    struct chunk *c = chunk_new(entry);
    if (c && !in_reach(entry, (uintptr_t)c->base)) /* a far chunk may serve near ones later */
        for (unsigned i = 0; i + 1 < nchunks; i++)
            if (chunks[i].used + len <= CHUNK_SIZE && !in_reach(entry, (uintptr_t)chunks[i].base))
                return &chunks[i];
    return c;
}

/* In a batch, pages made writable stay so (and executable) until the batch ends, which spares
 * two mprotect calls per function at start. */
#define MAX_OPEN_PAGES 256
static struct open_page {
    uintptr_t page;
    int prot; /* given back at the end of the batch */
} open_pages[MAX_OPEN_PAGES];
static unsigned nopen;
static int batching;

void at__patch_batch_begin(void)
{
    batching = 1;
}

void at__patch_batch_end(void)
{
    for (unsigned i = 0; i < nopen; i++)
        mprotect((void *)open_pages[i].page, page_size, open_pages[i].prot);
    nopen = 0;
    batching = 0;
}

/* Makes one page of a function writable, and keeps it executable: another thread may be
 * running code in it. Where the system refuses a page writable and executable at once, it is
 * made writable only, as safe as the other threads keep out of it. In a batch, once,
 * remembering its protection. */
static int open_page(uintptr_t page, int prot)
{
    for (unsigned i = 0; batching && i < nopen; i++)
        if (open_pages[i].page == page)
            return 0;
    if (batching && nopen == MAX_OPEN_PAGES) {
        at__patch_batch_end();
        batching = 1;
    }
    if (mprotect((void *)page, page_size, PROT_READ | PROT_WRITE | PROT_EXEC) != 0 &&
        mprotect((void *)page, page_size, PROT_READ | PROT_WRITE) != 0)
        return -errno;
    if (batching)
        open_pages[nopen++] = (struct open_page){page, prot};
    return 0;
}

/* Stores len bytes of code at `at`, which threads may be entering: in one aligned store when
 * they lie within an aligned 8 bytes (or 16, with lock cmpxchg16b), so that such a thread runs
 * the old bytes or the new ones, never a mix; else byte by byte. */
static void store_code(uintptr_t at, const uint8_t *code, size_t len)
{
    uintptr_t word = at & ~(uintptr_t)7, pair = at & ~(uintptr_t)15;
    uint64_t v[2];
    if (at + len <= word + 8) {
        memcpy(v, (const void *)word, 8);
        memcpy((uint8_t *)v + (at - word), code, len);
        __atomic_store_n((uint64_t *)word, v[0], __ATOMIC_RELEASE);
    } else if (at + len <= pair + 16) {
        memcpy(v, (const void *)pair, 16);
        uint64_t old_lo = v[0], old_hi = v[1];
        memcpy((uint8_t *)v + (at - pair), code, len);
        /* no other writer: the exchange finds the old bytes, and succeeds */
        __asm__ volatile("lock cmpxchg16b %0"
                         : "+m"(*(volatile uint64_t(*)[2])pair), "+a"(old_lo), "+d"(old_hi)
                         : "b"(v[0]), "c"(v[1])
                         : "cc", "memory");
    } else {
        memcpy((void *)at, code, len);
    }
}

/* Stores len bytes at `to` in a function whose pages' protection is `prot`: the pages are made
 * writable for the store, then get `prot` back, at once or at the batch's end. */
static int write_code(void *to, const void *from, size_t len, int prot)
{
    if (!page_size)
        page_size = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)to & ~(page_size - 1);
    uintptr_t end = (uintptr_t)to + len;
    for (uintptr_t page = first; page < end; page += page_size) {
        int err = open_page(page, prot);
        if (err < 0)
            return err;
    }
    store_code((uintptr_t)to, from, len);
    /* threads running patched code meanwhile run into the write */
    at__test_delay("ACTORTRACE_TEST_PATCH_DELAY_MS");
    if (!batching && mprotect((void *)first, end - first, prot) != 0)
        return -errno;
    return 0;
}

static size_t put_far_jump(uint8_t *out, uintptr_t target)
{
    static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0};
    memcpy(out, jmp_rip, sizeof jmp_rip);
    memcpy(out + sizeof jmp_rip, &target, sizeof target);
    return FAR_JUMP_LEN;
}

static size_t put_near_jump(uint8_t *out, uintptr_t at, uintptr_t target)
{
    int32_t rel = (int32_t)distance(target, at + NEAR_JUMP_LEN);
    out[0] = 0xe9;
    memcpy(out + 1, &rel, sizeof rel);
    return NEAR_JUMP_LEN;
}

static void refuse(struct at_patch *p, const char *fmt, uintptr_t detail)
{
    snprintf(p->why, sizeof p->why, fmt, (unsigned long)detail);
}

static ZydisDecoder decoder;

static int decode(uintptr_t at, size_t avail, ZydisDecodedInstruction *ins,
                  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT])
{
    static int ready;
    if (!ready)
        ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ready = 1;
    return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, (const void *)at, avail, ins, ops)) ? 0
                                                                                             : -1;
}

/* The target of a relative jump or call, 0 for any other instruction. */
static uintptr_t branch_target(const ZydisDecodedInstruction *ins, const ZydisDecodedOperand *ops,
                               uintptr_t at)
{
    for (unsigned i = 0; i < ins->operand_count_visible; i++) {
        ZyanU64 target;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative &&
            ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(ins, &ops[i], at, &target)))
            return (uintptr_t)target;
    }
    return 0;
}

/* 1 when target is one of the displaced bytes after the first, where the jump's would be. */
static int into_displaced(const struct at_patch *p, size_t displaced, uintptr_t target)
{
    return target > p->entry && target < p->entry + displaced;
}

static int segment_end(struct dl_phdr_info *info, size_t size, void *addr_end)
{
    (void)size;
    uintptr_t *q = addr_end; /* in: the address; out: the end of its segment */
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && q[0] >= start &&
            q[0] < start + ph->p_memsz) {
            q[1] = start + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

/* Refuses when an entry of the jump table at `table` (32-bit offsets from the table) goes into
 * the displaced bytes. Its entries are read while they point into the function, and only from
 * the loaded segment that holds the table. */
static int check_table(struct at_patch *p, size_t displaced, uintptr_t table)
{
    uintptr_t q[2] = {table, 0};
    dl_iterate_phdr(segment_end, q);
    for (uintptr_t e = table; e + sizeof(int32_t) <= q[1]; e += sizeof(int32_t)) {
        int32_t offset;
        memcpy(&offset, (const void *)e, sizeof offset);
        uintptr_t target = table + (uintptr_t)(intptr_t)offset;
        if (target < p->entry || target >= p->entry + p->size)
            return 0;
        if (into_displaced(p, displaced, target)) {
            refuse(p, "its jump table's entry %lu goes into the bytes the jump replaces",
                   (e - table) / sizeof(int32_t));
            return -EINVAL;
        }
    }
    return 0;
}

/* The jump table an instruction reads, 0 for none. The compilers' switch (PIC) is
 *     lea rT, [rip + table]; movsxd rX, [rT + rI*4]; add rX, rT; jmp rX
 * so a table is a register loaded by a RIP-relative lea (lea_at, by register) that a memory
 * operand then indexes by 4. */
static uintptr_t indexed_table(const ZydisDecodedInstruction *ins, const ZydisDecodedOperand *ops,
                               const uintptr_t *lea_at)
{
    for (unsigned i = 0; i < ins->operand_count_visible; i++) {
        const ZydisDecodedOperandMem *m = &ops[i].mem;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && m->index != ZYDIS_REGISTER_NONE &&
            m->scale == 4 && m->base != ZYDIS_REGISTER_NONE && lea_at[m->base])
            return lea_at[m->base];
    }
    return 0;
}

/* Remembers the address a RIP-relative lea loads into its register: a jump table's, maybe. */
static void note_lea(const ZydisDecodedInstruction *ins, const ZydisDecodedOperand *ops,
                     uintptr_t at, uintptr_t *lea_at)
{
    ZyanU64 target;
    if (ins->mnemonic == ZYDIS_MNEMONIC_LEA && ops[1].mem.base == ZYDIS_REGISTER_RIP &&
        ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(ins, &ops[1], at, &target)))
        lea_at[ops[0].reg.value] = (uintptr_t)target;
}

/* Refuses when an instruction of the function, other than those displaced, jumps into the
 * displaced bytes after the first (which the jump overwrites), directly or through a jump
 * table. The whole body must decode. */
static int check_branches(struct at_patch *p, size_t displaced)
{
    ZydisDecodedInstruction ins;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    uintptr_t lea_at[ZYDIS_REGISTER_MAX_VALUE + 1] = {0};
    for (uintptr_t at = p->entry; at < p->entry + p->size; at += ins.length) {
        if (decode(at, p->entry + p->size - at, &ins, ops) < 0) {
            refuse(p, "cannot decode its body at +%lu", at - p->entry);
            return -EINVAL;
        }
        if (into_displaced(p, displaced, branch_target(&ins, ops, at))) {
            refuse(p, "a branch at +%lu goes into the bytes the jump replaces", at - p->entry);
            return -EINVAL;
        }
        note_lea(&ins, ops, at, lea_at);
        uintptr_t table = indexed_table(&ins, ops, lea_at);
        if (table && check_table(p, displaced, table) < 0)
            return -EINVAL;
    }
    return 0;
}

/* ---- Entries without the stub --------------------------------------------------------------
 * A caller may keep a value in a call-clobbered register across a call only when its compiler
 * knows the callee leaves that register alone (GCC's -fipa-ra: the registers a function's code
 * writes, with those of the functions it calls). A function that makes a call the compiler
 * cannot see into (through a pointer, or through the PLT to another object) clobbers, as far as
 * any compiler knows, every call-clobbered register, and so does any function that calls it. A
 * caller of such a function keeps nothing in them, so its entry may jump straight to the
 * wrapper, as the PLT does, and skip the stub that saves them (patch_stubs.c).
 * The function's own body is read whole (its symbol gives its size), and so is that of a
 * function it calls or jumps to that the dynamic symbol table sizes; any other only from its
 * entry as far as the code runs on for certain: to the first return, jump or call of a
 * function of the object (which may not return: what follows may be another function's).
 * Anything that fails to decode, or lies outside the function's segment, proves nothing. */

#define CALLEE_DEPTH    3  /* functions followed from the body, call within call */
#define CALLEE_STRAIGHT 64 /* instructions read from a callee's entry */

struct code_range {
    uintptr_t start, end;
};

static int code_segment(struct dl_phdr_info *info, size_t size, void *range)
{
    (void)size;
    struct code_range *r = range; /* in: start is the address; out: its segment */
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && r->start >= start &&
            r->start < start + ph->p_memsz) {
            *r = (struct code_range){start, start + ph->p_memsz};
            return 1;
        }
    }
    return 0;
}

/* A jump through a RIP-relative memory word, as a PLT entry makes. */
static int jumps_through_memory(const ZydisDecodedInstruction *ins, const ZydisDecodedOperand *ops)
{
    return ins->mnemonic == ZYDIS_MNEMONIC_JMP && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
           ops[0].mem.base == ZYDIS_REGISTER_RIP && ops[0].mem.index == ZYDIS_REGISTER_NONE;
}

/* Whether the code at `at` is a PLT entry: (endbr64,) then a jump through a memory word. */
static int is_plt_entry(const struct code_range *code, uintptr_t at)
{
    ZydisDecodedInstruction ins;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    for (int i = 0; i < 2 && at >= code->start && at < code->end; i++, at += ins.length) {
        if (decode(at, code->end - at, &ins, ops) < 0)
            return 0;
        if (jumps_through_memory(&ins, ops))
            return 1;
        if (ins.mnemonic != ZYDIS_MNEMONIC_ENDBR64)
            return 0;
    }
    return 0;
}

static int clobbers_in(const struct code_range *code, uintptr_t at, uintptr_t end, int depth);

/* The size of the function that starts at `at`, from the dynamic symbol table; 0 when none
 * starts there. */
static size_t function_size(uintptr_t at)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)at, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        (uintptr_t)info.dli_saddr != at || ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
        return 0;
    return sym->st_size;
}

/* Whether a call or jump to `target` makes a call no compiler sees into. */
static int target_clobbers(const struct code_range *code, uintptr_t target, int depth)
{
    if (target < code->start || target >= code->end)
        return 0;
    if (is_plt_entry(code, target))
        return 1;
    if (depth == 0)
        return 0;
    size_t size = function_size(target);
    if (size > 0 && target + size <= code->end)
        return clobbers_in(code, target, target + size, depth - 1);
    return clobbers_in(code, target, 0, depth - 1);
}

/* Reads the code from `at` to `end` (0: as far as it runs on for certain, from a callee's
 * entry). Returns 1 when it makes a call that no compiler sees into. */
static int clobbers_in(const struct code_range *code, uintptr_t at, uintptr_t end, int depth)
{
    ZydisDecodedInstruction ins;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    uintptr_t begin = at, stop = end ? end : code->end;
    for (int n = 0; at < stop && (end || n < CALLEE_STRAIGHT); n++, at += ins.length) {
        if (decode(at, stop - at, &ins, ops) < 0)
            return 0;
        uintptr_t target = branch_target(&ins, ops, at);
        if (ins.mnemonic == ZYDIS_MNEMONIC_CALL) {
            if (!target || target_clobbers(code, target, depth))
                return 1; /* a call through a register or memory, or one that clobbers */
            if (!end)
                return 0; /* it may not return */
        } else if (ins.mnemonic == ZYDIS_MNEMONIC_JMP) {
            int outside = !end || target < begin || target >= end; /* a tail call, for the body */
            if (target && outside && target_clobbers(code, target, depth))
                return 1;
            if (!end)
                return 0;
        } else if (!end &&
                   (ins.mnemonic == ZYDIS_MNEMONIC_RET || ins.mnemonic == ZYDIS_MNEMONIC_UD2 ||
                    ins.mnemonic == ZYDIS_MNEMONIC_INT3 || ins.mnemonic == ZYDIS_MNEMONIC_HLT)) {
            return 0;
        }
    }
    return 0;
}

/* Whether every caller of the function already counts every call-clobbered register as lost
 * across the call (see above). */
static int callers_keep_nothing(const struct at_patch *p)
{
    struct code_range code = {p->entry, 0};
    if (!dl_iterate_phdr(code_segment, &code) || p->entry + p->size > code.end)
        return 0;
    return clobbers_in(&code, p->entry, p->entry + p->size, CALLEE_DEPTH);
}

/* Re-encodes one instruction decoded at `from` to run at `to`: RIP-relative operands and
 * relative branches keep their absolute targets. Returns its new length, or 0 when it cannot
 * be encoded there (a target out of reach, an instruction with no longer form). */
static size_t relocate(const ZydisDecodedInstruction *ins, const ZydisDecodedOperand *ops,
                       uintptr_t from, uintptr_t to, uint8_t *out, size_t cap)
{
    if (!(ins->attributes & ZYDIS_ATTRIB_IS_RELATIVE)) {
        memcpy(out, (const void *)from, ins->length);
        return ins->length;
    }
    ZydisEncoderRequest req;
    if (!ZYAN_SUCCESS(ZydisEncoderDecodedInstructionToEncoderRequest(
            ins, ops, ins->operand_count_visible, &req)))
        return 0;
    for (unsigned i = 0; i < ins->operand_count_visible; i++) {
        ZyanU64 target;
        if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(ins, &ops[i], from, &target)))
            continue;
        if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.base == ZYDIS_REGISTER_RIP)
            req.operands[i].mem.displacement = (ZyanI64)target;
        else if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative) {
            req.operands[i].imm.u = target;
            req.branch_type = ZYDIS_BRANCH_TYPE_NONE; /* a short branch may need rel32 */
            req.branch_width = ZYDIS_BRANCH_WIDTH_NONE;
        }
    }
    ZyanUSize len = cap;
    if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstructionAbsolute(&req, out, &len, to)))
        return 0;
    return len;
}

/* Builds the trampoline for the first `displaced` bytes at tramp_at into out; returns its
 * length, 0 (with p->why set) when an instruction cannot be relocated. */
static size_t build_trampoline(struct at_patch *p, size_t displaced, uintptr_t tramp_at,
                               uint8_t *out)
{
    ZydisDecodedInstruction ins;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    size_t len = 0;
    for (uintptr_t at = p->entry; at < p->entry + displaced; at += ins.length) {
        decode(at, p->entry + displaced - at, &ins, ops); /* decoded once already */
        size_t n =
            relocate(&ins, ops, at, tramp_at + len, out + len, TRAMPOLINE_MAX - FAR_JUMP_LEN - len);
        if (n == 0) {
            refuse(p, "its instruction at +%lu cannot be relocated", at - p->entry);
            return 0;
        }
        len += n;
    }
    return len + put_far_jump(out + len, p->entry + displaced);
}

/* How many whole instructions cover the first `need` bytes; 0 (p->why set) when the function
 * is shorter or does not decode. */
static size_t displaced_len(struct at_patch *p, size_t need)
{
    ZydisDecodedInstruction ins;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    size_t len = 0;
    if (p->size < need) {
        refuse(p, "its %lu bytes are fewer than the jump needs", p->size);
        return 0;
    }
    while (len < need) {
        if (decode(p->entry + len, p->size - len, &ins, ops) < 0) {
            refuse(p, "cannot decode its instruction at +%lu", len);
            return 0;
        }
        len += ins.length;
    }
    if (len > p->size) {
        refuse(p, "its first instructions run past its end (%lu bytes)", p->size);
        return 0;
    }
    return len;
}

/* The stub at `at`: pushes rax, points it at the desc and jumps to desc.enter. */
static void put_stub(uint8_t *out, uintptr_t at, uintptr_t desc)
{
    int32_t rel = (int32_t)distance(desc, at + 8);
    out[0] = 0x50;                               /* push rax */
    out[1] = 0x48, out[2] = 0x8d, out[3] = 0x05; /* lea rax, [rip + rel] */
    memcpy(out + 4, &rel, sizeof rel);
    out[8] = 0xff, out[9] = 0x60; /* jmp [rax + disp8] */
    out[10] = (uint8_t)offsetof(struct at_patch_desc, enter);
}

/* Writes the desc, the stub and the trampoline into chunk c; returns the stub's address, 0 on
 * failure. The stub of a direct entry (p->direct) is a jump to the wrapper. The entry does not
 * jump there yet: no thread can run them while they are written. */
static uintptr_t emit(struct at_patch *p, struct chunk *c, size_t displaced)
{
    uint8_t code[EMIT_MAX];
    uintptr_t desc = (uintptr_t)c->base + c->used;
    uintptr_t stub = desc + sizeof(struct at_patch_desc), tramp = stub + STUB_MAX;
    size_t len = build_trampoline(p, displaced, tramp, code + (tramp - desc));
    if (len == 0)
        return 0;
    struct at_patch_desc d = {p->wrapper, (void *)tramp, p->returns, (void *)at__patch_enter};
    memcpy(code, &d, sizeof d);
    if (p->direct)
        put_far_jump(code + sizeof d, (uintptr_t)p->wrapper);
    else
        put_stub(code + sizeof d, stub, desc);
    len += tramp - desc;
    memcpy(c->write + c->used, code, len);
    c->used += (len + 15) & ~(size_t)15;
    p->trampoline = (void *)tramp;
    return stub;
}

/* Overwrites the entry with a jump to `to`, near when in reach, else far. The rest of the
 * displaced bytes stay as they are: a thread that was inside them when the jump was written
 * runs on through the original instructions. */
static int write_entry(struct at_patch *p, uintptr_t to, int far)
{
    uint8_t code[FAR_JUMP_LEN];
    size_t len = far ? put_far_jump(code, to) : put_near_jump(code, p->entry, to);
    int err = write_code((void *)p->entry, code, len, p->prot);
    if (err < 0)
        refuse(p, "cannot write its entry (errno %lu)", (uintptr_t)-err);
    return err;
}

int at__patch_entry(struct at_patch *p)
{
    p->why[0] = 0;
    p->direct = 0;
    p->trampoline = NULL;
    at__patch_stubs_init();
    struct chunk *c = chunk_for(p->entry, EMIT_MAX);
    if (!c) {
        refuse(p, "no memory for its trampoline (%lu chunks)", nchunks);
        return -ENOMEM;
    }
    int far = !in_reach(p->entry, (uintptr_t)c->base);
    size_t displaced = displaced_len(p, far ? FAR_JUMP_LEN : NEAR_JUMP_LEN);
    if (displaced == 0 || check_branches(p, displaced) < 0)
        return -EINVAL;
    if (into_displaced(p, displaced, p->foreign)) {
        refuse(p, "a jump from outside it (a .cold part) goes to +%lu, which the jump replaces",
               p->foreign - p->entry);
        return -EINVAL;
    }
    p->direct = !p->stub_only && callers_keep_nothing(p);
    uintptr_t stub = emit(p, c, displaced);
    if (stub == 0)
        return -EINVAL;
    /* release: the wrapper's acquire (or dependent) load of real_ sees the trampoline whole;
     * should the entry not be written, the trampoline still runs the function as it is */
    if (p->real)
        __atomic_store_n(p->real, p->trampoline, __ATOMIC_RELEASE);
    return write_entry(p, stub, far);
}
