/* Reading what the command needs from an ELF file: its class and machine, whether the dynamic
 * loader starts it (PT_INTERP: without one, LD_PRELOAD is never read), the libraries it names
 * (DT_NEEDED) and the symbols a library defines (.dynsym). The file is untrusted: every read
 * is checked against the file's size and copied out, so no offset or alignment is assumed. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static bool read_at(const struct elf_file *elf, uint64_t offset, void *out, size_t len)
{
    if (offset > elf->size || len > elf->size - offset)
        return false;
    memcpy(out, elf->data + offset, len);
    return true;
}

/* The NUL-terminated string at OFFSET of a string table of SIZE bytes at TABLE, or NULL. */
static const char *string_at(const struct elf_file *elf, uint64_t table, uint64_t size,
                             uint64_t offset)
{
    if (table > elf->size || size > elf->size - table || offset >= size)
        return NULL;
    const char *s = (const char *)elf->data + table + offset;
    return memchr(s, '\0', size - offset) ? s : NULL;
}

static void identify(struct elf_file *elf)
{
    unsigned char ident[EI_NIDENT];
    uint16_t machine;
    if (!read_at(elf, 0, ident, sizeof ident) || memcmp(ident, ELFMAG, SELFMAG) != 0 ||
        !read_at(elf, offsetof(Elf64_Ehdr, e_machine), &machine, sizeof machine))
        return;
    elf->elf_class = ident[EI_CLASS];
    elf->machine = machine; /* at the same offset in both classes */
}

int at__elf_open(const char *path, struct elf_file *elf)
{
    *elf = (struct elf_file){.data = NULL};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = fstat(fd, &st) < 0 ? -errno : 0;
    if (!err && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            err = -errno;
        else
            *elf = (struct elf_file){.data = map, .size = (size_t)st.st_size};
    }
    close(fd);
    if (elf->data)
        identify(elf);
    return err;
}

void at__elf_close(struct elf_file *elf)
{
    if (elf->data)
        munmap((void *)elf->data, elf->size);
    elf->data = NULL;
}

/* The ELF header, when the file is one we read in full. */
static bool header(const struct elf_file *elf, Elf64_Ehdr *eh)
{
    return elf->elf_class == ELFCLASS64 && read_at(elf, 0, eh, sizeof *eh) &&
           eh->e_ident[EI_DATA] ==
               (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB);
}

static bool program_header(const struct elf_file *elf, const Elf64_Ehdr *eh, unsigned i,
                           Elf64_Phdr *ph)
{
    return eh->e_phentsize == sizeof *ph &&
           read_at(elf, eh->e_phoff + (uint64_t)i * sizeof *ph, ph, sizeof *ph);
}

/* The first program header of TYPE. */
static bool find_segment(const struct elf_file *elf, uint32_t type, Elf64_Phdr *ph)
{
    Elf64_Ehdr eh;
    if (!header(elf, &eh))
        return false;
    for (unsigned i = 0; i < eh.e_phnum; i++)
        if (program_header(elf, &eh, i, ph) && ph->p_type == type)
            return true;
    return false;
}

bool at__elf_has_interp(const struct elf_file *elf)
{
    Elf64_Phdr ph;
    return find_segment(elf, PT_INTERP, &ph);
}

/* The file offset of virtual address VADDR, through the PT_LOAD segment that maps it. */
static bool file_offset(const struct elf_file *elf, uint64_t vaddr, uint64_t *offset)
{
    Elf64_Ehdr eh;
    Elf64_Phdr ph;
    if (!header(elf, &eh))
        return false;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        if (program_header(elf, &eh, i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
            vaddr - ph.p_vaddr < ph.p_filesz) {
            *offset = ph.p_offset + (vaddr - ph.p_vaddr);
            return true;
        }
    }
    return false;
}

/* The dynamic section's string table (DT_STRTAB, DT_STRSZ) as a file offset and size. */
static bool dynamic_strings(const struct elf_file *elf, const Elf64_Phdr *dyn, uint64_t *table,
                            uint64_t *size)
{
    uint64_t vaddr = 0;
    *size = 0;
    Elf64_Dyn d;
    for (uint64_t off = 0; off + sizeof d <= dyn->p_filesz; off += sizeof d) {
        if (!read_at(elf, dyn->p_offset + off, &d, sizeof d) || d.d_tag == DT_NULL)
            break;
        if (d.d_tag == DT_STRTAB)
            vaddr = d.d_un.d_ptr;
        else if (d.d_tag == DT_STRSZ)
            *size = d.d_un.d_val;
    }
    return vaddr && *size && file_offset(elf, vaddr, table);
}

bool at__elf_needs(const struct elf_file *elf, const char *prefix)
{
    Elf64_Phdr dyn;
    uint64_t table, size;
    if (!find_segment(elf, PT_DYNAMIC, &dyn) || !dynamic_strings(elf, &dyn, &table, &size))
        return false;
    Elf64_Dyn d;
    for (uint64_t off = 0; off + sizeof d <= dyn.p_filesz; off += sizeof d) {
        if (!read_at(elf, dyn.p_offset + off, &d, sizeof d) || d.d_tag == DT_NULL)
            break;
        const char *name = d.d_tag == DT_NEEDED ? string_at(elf, table, size, d.d_un.d_val) : NULL;
        if (name && strncmp(name, prefix, strlen(prefix)) == 0)
            return true;
    }
    return false;
}

static bool section_header(const struct elf_file *elf, const Elf64_Ehdr *eh, unsigned i,
                           Elf64_Shdr *sh)
{
    return eh->e_shentsize == sizeof *sh && i < eh->e_shnum &&
           read_at(elf, eh->e_shoff + (uint64_t)i * sizeof *sh, sh, sizeof *sh);
}

/* Whether the symbol table SYMTAB, with its string table, defines NAME. */
static bool table_defines(const struct elf_file *elf, const Elf64_Shdr *symtab,
                          const Elf64_Shdr *strtab, const char *name)
{
    Elf64_Sym sym;
    for (uint64_t off = 0; off + sizeof sym <= symtab->sh_size; off += sizeof sym) {
        if (!read_at(elf, symtab->sh_offset + off, &sym, sizeof sym))
            return false;
        unsigned bind = ELF64_ST_BIND(sym.st_info);
        const char *s = string_at(elf, strtab->sh_offset, strtab->sh_size, sym.st_name);
        if (sym.st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) && s &&
            strcmp(s, name) == 0)
            return true;
    }
    return false;
}

/* Whether the first symbol table of that type defines SYMBOL. */
static bool section_defines(const struct elf_file *elf, unsigned type, const char *symbol)
{
    Elf64_Ehdr eh;
    Elf64_Shdr sh, strtab;
    if (!header(elf, &eh))
        return false;
    for (unsigned i = 0; i < eh.e_shnum; i++)
        if (section_header(elf, &eh, i, &sh) && sh.sh_type == type &&
            section_header(elf, &eh, sh.sh_link, &strtab))
            return table_defines(elf, &sh, &strtab, symbol);
    return false;
}

bool at__elf_exports(const struct elf_file *elf, const char *symbol)
{
    return section_defines(elf, SHT_DYNSYM, symbol);
}

bool at__elf_defines(const struct elf_file *elf, const char *symbol)
{
    return section_defines(elf, SHT_SYMTAB, symbol) || section_defines(elf, SHT_DYNSYM, symbol);
}
