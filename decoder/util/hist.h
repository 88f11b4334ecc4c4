/* Latency histograms: log-linear buckets (32 per power of two, so a percentile is within 1/64
 * of the exact value), exact below 32 ns, with the exact count, sum and maximum beside them.
 * Only the buckets in use are stored, 8 bytes each: there is a histogram per actor, and when
 * each held all 1,920 buckets, a million actors that handled a message each took 15 GiB. */
#ifndef HIST_H
#define HIST_H

#include <stdint.h>

struct hist {
    uint64_t count, sum, max;
    uint64_t *used; /* the buckets in use, ascending: bucket << 48 | its samples */
    uint32_t n, cap;
    uint32_t last; /* the entry of the latest sample: the next one often falls in it too */
};

/* Returns 0 or -ENOMEM. */
int at__hist_add(struct hist *h, uint64_t v);

/* The value below which a fraction p (0 < p <= 1) of the samples lie: the sample of rank
 * ceil(p * count), reported as the middle of its bucket. 0 when empty. */
uint64_t at__hist_percentile(const struct hist *h, double p);

void at__hist_free(struct hist *h);

#endif
