/* tsc -> CLOCK_MONOTONIC nanoseconds, from the CLOCK samples of a trace (FORMAT.md section 5,
 * "Converting timestamps"). */
#ifndef CLOCK_H
#define CLOCK_H

#include <stddef.h>
#include <stdint.h>

struct clock_sample {
    uint64_t tsc, mono_ns, real_ns;
};

/* Samples sorted by tsc, one per tsc value, with mono_ns made non-decreasing. */
struct clock_map {
    struct clock_sample *samples;
    uint64_t *inverse; /* per segment, floor(2^64 / its tsc span), for a division-free lookup */
    size_t n;
    size_t adjusted; /* samples dropped (same tsc) or raised (mono_ns went backwards) */
};

/* Copies and sorts samples[0..n). With no sample ts_ns is the raw tsc; with one, 1 tick = 1 ns
 * (the caller warns: n tells it). Returns 0 or -ENOMEM. */
int at__clock_init(struct clock_map *c, const struct clock_sample *samples, size_t n);

/* at__clock_ns for any tsc (clock.c). */
uint64_t at__clock_ns_any(const struct clock_map *c, uint64_t tsc, size_t *hint);

/* floor(x / d), given inverse = floor(2^64 / d) (0 when d is 1). The estimate, the high half
 * of x * inverse, is at most 2 below the quotient and never above it, and a multiplication is
 * several times cheaper than a division: this runs once per event. */
static inline uint64_t at__clock_divide(uint64_t x, uint64_t d, uint64_t inverse)
{
    if (inverse == 0)
        return x / d;
    uint64_t q = (uint64_t)(((unsigned __int128)x * inverse) >> 64);
    for (uint64_t r = x - q * d; r >= d; r -= d)
        q++;
    return q;
}

/* The nanoseconds of tsc. Non-decreasing in tsc. *hint is a segment cursor kept by the caller
 * (start it at 0): consecutive lookups of nearby values then cost no search. Inline for the
 * case of nearly every event, a tsc inside the hinted segment; the same result as
 * at__clock_ns_any. */
static inline uint64_t at__clock_ns(const struct clock_map *c, uint64_t tsc, size_t *hint)
{
    size_t i = *hint;
    if (i + 1 < c->n && tsc >= c->samples[i].tsc && tsc < c->samples[i + 1].tsc) {
        const struct clock_sample *a = &c->samples[i];
        uint64_t product, mono = a->mono_ns;
        if (!__builtin_mul_overflow(tsc - a->tsc, a[1].mono_ns - mono, &product)) {
            uint64_t ns = at__clock_divide(product, a[1].tsc - a->tsc, c->inverse[i]);
            return ns > UINT64_MAX - mono ? UINT64_MAX : mono + ns;
        }
    }
    return at__clock_ns_any(c, tsc, hint);
}

void at__clock_free(struct clock_map *c);

#endif
