/* Entry patching on x86-64: overwrite a function's first instructions with a jump to a wrapper,
 * and build the trampoline that runs those instructions, relocated, and jumps back. Zydis
 * decodes and re-encodes the instructions. Everything here refuses rather than guesses: a
 * function shorter than the jump, a jump back into the bytes the patch replaces, or a first
 * instruction that cannot be re-encoded at the trampoline's address is left as it is.
 *
 * The code lives in chunks mapped within +-2 GiB of the functions, so that the entry needs only
 * a 5-byte jump (to a stub in the chunk that jumps on to the wrapper) and RIP-relative operands
 * still reach from the trampoline; where no chunk can be mapped that close the entry gets a
 * 14-byte absolute jump. No page is ever writable and executable at once. Not thread-safe: the
 * caller serializes the calls (patch.c, under its mutex), and patches only functions no other
 * thread can be running (before main, or in an object dlopen has just loaded). */
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#include "patch.h"

#define NEAR_JUMP_LEN  5  /* jmp rel32 */
#define FAR_JUMP_LEN   14 /* jmp [rip+0]; .quad target */
#define REACH          (0x7fffffffll - CHUNK_SIZE)
#define CHUNK_SIZE     (64u << 10)
#define MAX_CHUNKS     64
#define MAX_DISPLACED  32 /* displaced bytes: at most the far jump plus one instruction */
#define TRAMPOLINE_MAX (MAX_DISPLACED * 2 + 4 * ZYDIS_MAX_INSTRUCTION_LENGTH + FAR_JUMP_LEN)

/* Mapped code memory, handed out from the start; kept for the life of the process. */
struct chunk {
    uint8_t *base;
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

/* Maps a chunk at exactly `hint`; NULL when that range is taken. */
static uint8_t *map_at(uintptr_t hint)
{
    void *p = mmap((void *)hint, CHUNK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if ((uintptr_t)p != hint) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(p, CHUNK_SIZE);
        return NULL;
    }
    return p;
}

/* A new chunk as near `entry` as a few tries find (below first: the gaps under an image are
 * usually free), else anywhere. */
static struct chunk *chunk_new(uintptr_t entry)
{
    if (nchunks == MAX_CHUNKS)
        return NULL;
    uint8_t *base = NULL;
    uintptr_t aligned = entry & ~((uintptr_t)CHUNK_SIZE - 1);
    for (uint64_t d = 1u << 20; !base && d < (1ull << 30); d *= 2) {
        if (aligned > d)
            base = map_at(aligned - d);
        if (!base)
            base = map_at(aligned + d);
    }
    if (!base) {
        void *p =
            mmap(NULL, CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        base = p;
    }
    if (mprotect(base, CHUNK_SIZE, PROT_READ | PROT_EXEC) != 0) {
        munmap(base, CHUNK_SIZE);
        return NULL;
    }
    chunks[nchunks] = (struct chunk){base, 0};
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

/* In a batch, pages made writable stay so (never executable meanwhile) until the batch ends,
 * which spares two mprotect calls per function at start. */
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

/* Makes one page writable; in a batch, once, remembering its protection. */
static int open_page(uintptr_t page, int prot)
{
    for (unsigned i = 0; batching && i < nopen; i++)
        if (open_pages[i].page == page)
            return 0;
    if (batching && nopen == MAX_OPEN_PAGES) {
        at__patch_batch_end();
        batching = 1;
    }
    if (mprotect((void *)page, page_size, PROT_READ | PROT_WRITE) != 0)
        return -errno;
    if (batching)
        open_pages[nopen++] = (struct open_page){page, prot};
    return 0;
}

/* Copies len bytes to `to` in code memory whose protection is `prot`: the pages are made
 * writable (not executable) for the copy, then get `prot` back, at once or at the batch's end. */
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
    memcpy(to, from, len);
    if (!batching && mprotect((void *)first, end - first, prot) != 0)
        return -errno;
    __builtin___clear_cache((char *)to, (char *)to + len);
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

/* Writes the stub (jump to the wrapper) and the trampoline into chunk c; returns the stub's
 * address, 0 on failure. */
static uintptr_t emit(struct at_patch *p, struct chunk *c, size_t displaced)
{
    uint8_t code[FAR_JUMP_LEN + TRAMPOLINE_MAX];
    uintptr_t stub = (uintptr_t)c->base + c->used;
    size_t len = put_far_jump(code, (uintptr_t)p->wrapper);
    size_t tramp = build_trampoline(p, displaced, stub + len, code + len);
    if (tramp == 0)
        return 0;
    int err = write_code((void *)stub, code, len + tramp, PROT_READ | PROT_EXEC);
    if (err < 0) {
        refuse(p, "cannot write its trampoline (errno %lu)", (uintptr_t)-err);
        return 0;
    }
    c->used += (len + tramp + 15) & ~(size_t)15;
    p->trampoline = (void *)(stub + len);
    return stub;
}

/* Overwrites the entry with a jump to `to` (near when in reach, else far), the rest of the
 * displaced bytes with int3. */
static int write_entry(struct at_patch *p, uintptr_t to, size_t displaced, int far)
{
    uint8_t code[MAX_DISPLACED];
    memset(code, 0xcc, sizeof code);
    if (far)
        put_far_jump(code, to);
    else
        put_near_jump(code, p->entry, to);
    int err = write_code((void *)p->entry, code, displaced, p->prot);
    if (err < 0)
        refuse(p, "cannot write its entry (errno %lu)", (uintptr_t)-err);
    return err;
}

int at__patch_entry(struct at_patch *p)
{
    p->why[0] = 0;
    p->trampoline = NULL;
    struct chunk *c = chunk_for(p->entry, FAR_JUMP_LEN + TRAMPOLINE_MAX);
    if (!c) {
        refuse(p, "no memory for its trampoline (%lu chunks)", nchunks);
        return -ENOMEM;
    }
    int far = !in_reach(p->entry, (uintptr_t)c->base);
    size_t displaced = displaced_len(p, far ? FAR_JUMP_LEN : NEAR_JUMP_LEN);
    if (displaced == 0 || check_branches(p, displaced) < 0)
        return -EINVAL;
    uintptr_t stub = emit(p, c, displaced);
    if (stub == 0)
        return -EINVAL;
    return write_entry(p, far ? (uintptr_t)p->wrapper : stub, displaced, far);
}
