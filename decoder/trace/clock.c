/* tsc -> CLOCK_MONOTONIC nanoseconds: piecewise linear between the CLOCK samples of a trace,
 * extrapolated beyond the first and last from the nearest two. The arithmetic is exact (a
 * 128-bit product, then the division, rounded down), so a sample's tsc gives its mono_ns to
 * the nanosecond and the conversion is non-decreasing without any correction. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "order.h"

static int by_tsc(const void *a, const void *b)
{
    const struct clock_sample *x = a, *y = b;
    int c = at__order(x->tsc, y->tsc);
    return c ? c : at__order(x->mono_ns, y->mono_ns);
}

/* Sorts, keeps one sample per tsc and raises mono_ns where it went backwards, so that every
 * segment has a positive tick count and a non-negative slope: that is what keeps the
 * conversion monotonic. */
static void normalise(struct clock_map *c)
{
    qsort(c->samples, c->n, sizeof *c->samples, by_tsc);
    size_t kept = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct clock_sample s = c->samples[i];
        if (kept > 0 && s.tsc == c->samples[kept - 1].tsc) {
            c->adjusted++;
            continue;
        }
        if (kept > 0 && s.mono_ns < c->samples[kept - 1].mono_ns) {
            s.mono_ns = c->samples[kept - 1].mono_ns;
            c->adjusted++;
        }
        c->samples[kept++] = s;
    }
    c->n = kept;
}

/* floor(2^64 / dtsc) of each segment, for at__clock_divide; normalise() left every dtsc above 0. */
static int inverses(struct clock_map *c)
{
    c->inverse = malloc((c->n - 1) * sizeof *c->inverse);
    if (!c->inverse) {
        at__clock_free(c);
        return -ENOMEM;
    }
    for (size_t i = 0; i + 1 < c->n; i++) {
        uint64_t dtsc = c->samples[i + 1].tsc - c->samples[i].tsc;
        c->inverse[i] = dtsc == 1 ? 0 : (uint64_t)(((unsigned __int128)1 << 64) / dtsc);
    }
    return 0;
}

int at__clock_init(struct clock_map *c, const struct clock_sample *samples, size_t n)
{
    *c = (struct clock_map){0};
    if (n == 0)
        return 0;
    c->samples = malloc(n * sizeof *c->samples);
    if (!c->samples)
        return -ENOMEM;
    memcpy(c->samples, samples, n * sizeof *samples);
    c->n = n;
    normalise(c);
    return c->n > 1 ? inverses(c) : 0;
}

/* mono + ticks * dmono / dtsc, rounded down, at most UINT64_MAX. Within a segment of a real
 * trace the product fits in 64 bits; the 128-bit division is for the far extrapolations. */
static uint64_t after(uint64_t mono, uint64_t ticks, uint64_t dmono, uint64_t dtsc,
                      uint64_t inverse)
{
    uint64_t product;
    if (!__builtin_mul_overflow(ticks, dmono, &product)) {
        uint64_t ns = at__clock_divide(product, dtsc, inverse);
        return ns > UINT64_MAX - mono ? UINT64_MAX : mono + ns;
    }
    unsigned __int128 ns = (unsigned __int128)ticks * dmono / dtsc;
    return ns > UINT64_MAX - mono ? UINT64_MAX : mono + (uint64_t)ns;
}

/* mono - ticks * dmono / dtsc, rounded down (so the distance rounds up), at least 0. */
static uint64_t before(uint64_t mono, uint64_t ticks, uint64_t dmono, uint64_t dtsc)
{
    unsigned __int128 product = (unsigned __int128)ticks * dmono;
    unsigned __int128 ns = product / dtsc + (product % dtsc != 0);
    return ns > mono ? 0 : mono - (uint64_t)ns;
}

/* The segment for tsc: i with samples[i].tsc <= tsc < samples[i + 1].tsc, clamped to the first
 * and last segment for the extrapolated ends. Requires n >= 2. */
static size_t segment(const struct clock_map *c, uint64_t tsc, size_t hint)
{
    const struct clock_sample *s = c->samples;
    size_t last = c->n - 2;
    if (hint <= last && (hint == 0 || s[hint].tsc <= tsc) &&
        (hint == last || tsc < s[hint + 1].tsc))
        return hint;
    size_t lo = 0, hi = last; /* the answer is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (s[mid].tsc <= tsc)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

uint64_t at__clock_ns_any(const struct clock_map *c, uint64_t tsc, size_t *hint)
{
    if (c->n == 0)
        return tsc;
    const struct clock_sample *a = &c->samples[0], *b = a;
    uint64_t dmono = 1, dtsc = 1, inverse = 0; /* one sample: 1 tick = 1 ns */
    if (c->n > 1) {
        *hint = segment(c, tsc, *hint);
        a = &c->samples[*hint];
        b = a + 1;
        dmono = b->mono_ns - a->mono_ns;
        dtsc = b->tsc - a->tsc;
        inverse = c->inverse[*hint];
    }
    if (tsc >= b->tsc) /* at or past the last sample */
        return after(b->mono_ns, tsc - b->tsc, dmono, dtsc, inverse);
    if (tsc >= a->tsc)
        return after(a->mono_ns, tsc - a->tsc, dmono, dtsc, inverse);
    return before(a->mono_ns, a->tsc - tsc, dmono, dtsc);
}

void at__clock_free(struct clock_map *c)
{
    free(c->samples);
    free(c->inverse);
    *c = (struct clock_map){0};
}
