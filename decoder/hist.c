/* Log-linear histogram. A value v >= 32 with highest set bit e falls in bucket
 * 32 + (e - 5) * 32 + the five bits below its highest one, so the bucket width is at most
 * 1/32 of any value in it and its middle at most 1/64 away. */
#include <errno.h>
#include <stdlib.h>

#include "hist.h"

#define SUB_BITS 5
#define SUB      (1u << SUB_BITS)
#define NBUCKETS (SUB + (64 - SUB_BITS) * SUB)

static unsigned bucket_of(uint64_t v)
{
    if (v < SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    return SUB + (e - SUB_BITS) * SUB + (unsigned)((v >> (e - SUB_BITS)) & (SUB - 1));
}

/* The middle of bucket i. */
static uint64_t middle(unsigned i)
{
    if (i < SUB)
        return i;
    unsigned shift = (i - SUB) / SUB;
    uint64_t low = (uint64_t)(SUB + (i - SUB) % SUB) << shift;
    return low + (((uint64_t)1 << shift) - 1) / 2;
}

int at__hist_add(struct hist *h, uint64_t v)
{
    if (!h->buckets && !(h->buckets = calloc(NBUCKETS, sizeof *h->buckets)))
        return -ENOMEM;
    h->buckets[bucket_of(v)]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
    return 0;
}

uint64_t at__hist_percentile(const struct hist *h, double p)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(p * (double)h->count);
    if ((double)rank < p * (double)h->count || rank == 0)
        rank++;
    uint64_t seen = 0;
    for (unsigned i = 0; i < NBUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            return middle(i) < h->max ? middle(i) : h->max;
    }
    return h->max;
}

void at__hist_free(struct hist *h)
{
    free(h->buckets);
    *h = (struct hist){0};
}
