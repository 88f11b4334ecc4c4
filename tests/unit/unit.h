/* What every unit test shares: one "ok - NAME" / "not ok - NAME" line per check, a failure
 * count for the exit status, and a small deterministic random generator (xorshift64). */
#ifndef AT_UNIT_H
#define AT_UNIT_H

#include <stdint.h>
#include <stdio.h>

static int failures;

static inline void check(int ok, const char *name)
{
    printf("%s - %s\n", ok ? "ok" : "not ok", name);
    failures += !ok;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

#endif
