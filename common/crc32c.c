/* crc32c (Castagnoli), the checksum of every frame header and payload. The SSE4.2 crc32
 * instruction does 8 bytes a step where the CPU has it (checked once with cpuid); elsewhere a
 * 16-entry table does a nibble a step: small enough to be a constant, so there is no
 * initialisation to race on when several recorder threads checksum at once. */
#include <stdint.h>
#include <string.h>

#include "at_codec.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

/* crc of nibble i with the reflected polynomial 0x82F63B78. */
static const uint32_t nibble_table[16] = {
    0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1, 0x417b1dbc, 0x5125dad3, 0x61c69362, 0x7198540d,
    0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9, 0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75,
};

static uint32_t crc_soft(uint32_t state, const uint8_t *p, size_t len)
{
    while (len--) {
        state ^= *p++;
        state = (state >> 4) ^ nibble_table[state & 15];
        state = (state >> 4) ^ nibble_table[state & 15];
    }
    return state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t state, const uint8_t *p,
                                                         size_t len)
{
    uint64_t wide = state;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        wide = _mm_crc32_u64(wide, word);
    }
    state = (uint32_t)wide;
    while (len--)
        state = _mm_crc32_u8(state, *p++);
    return state;
}

/* 0 = not checked yet, 1 = no SSE4.2, 2 = SSE4.2. Threads that race here compute the same
 * answer, so relaxed ordering is enough. */
static int have_hw;

static int hw_available(void)
{
    /* relaxed: pairs with the store below only in value (see have_hw) */
    int known = __atomic_load_n(&have_hw, __ATOMIC_RELAXED);
    if (known == 0) {
        unsigned a, b, c, d;
        known = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 2 : 1;
        /* relaxed: every racing thread stores the same answer */
        __atomic_store_n(&have_hw, known, __ATOMIC_RELAXED);
    }
    return known == 2;
}
#endif

uint32_t at_crc32c(uint32_t crc, const void *data, size_t len)
{
    uint32_t state = ~crc;
#if defined(__x86_64__)
    if (hw_available())
        return ~crc_hw(state, data, len);
#endif
    return ~crc_soft(state, data, len);
}
