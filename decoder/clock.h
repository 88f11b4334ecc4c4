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
    size_t n;
    size_t adjusted; /* samples dropped (same tsc) or raised (mono_ns went backwards) */
};

/* Copies and sorts samples[0..n). With no sample ts_ns is the raw tsc; with one, 1 tick = 1 ns
 * (the caller warns: n tells it). Returns 0 or -ENOMEM. */
int at__clock_init(struct clock_map *c, const struct clock_sample *samples, size_t n);

/* The nanoseconds of tsc. Non-decreasing in tsc. *hint is a segment cursor kept by the caller
 * (start it at 0): consecutive lookups of nearby values then cost no search. */
uint64_t at__clock_ns(const struct clock_map *c, uint64_t tsc, size_t *hint);

void at__clock_free(struct clock_map *c);

#endif
