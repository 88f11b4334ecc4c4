/* Latency histograms: log-linear buckets (32 per power of two, so a percentile is within 1/64
 * of the exact value), exact below 32 ns, with the exact count, sum and maximum beside them.
 * 15 KiB each, allocated on the first sample. */
#ifndef HIST_H
#define HIST_H

#include <stdint.h>

struct hist {
    uint64_t count, sum, max;
    uint64_t *buckets;
};

/* Returns 0 or -ENOMEM. */
int at__hist_add(struct hist *h, uint64_t v);

/* The value below which a fraction p (0 < p <= 1) of the samples lie: the sample of rank
 * ceil(p * count), reported as the middle of its bucket. 0 when empty. */
uint64_t at__hist_percentile(const struct hist *h, double p);

void at__hist_free(struct hist *h);

#endif
