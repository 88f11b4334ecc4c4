/* Log-linear histogram. A value v >= 32 with highest set bit e falls in bucket
 * 32 + (e - 5) * 32 + the five bits below its highest one, so the bucket width is at most
 * 1/32 of any value in it and its middle at most 1/64 away. The buckets in use are kept in
 * one sorted array, found by binary search. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hist.h"

#define SUB_BITS   5
#define SUB        (1u << SUB_BITS)
#define COUNT_BITS 48 /* an entry of used: its bucket above, its samples (< 2^48) below */
#define COUNT_MASK ((UINT64_C(1) << COUNT_BITS) - 1)

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

/* The index in used of the bucket's entry, or where it would go. */
static uint32_t find(const struct hist *h, uint64_t bucket)
{
    uint32_t lo = 0, hi = h->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->used[mid] >> COUNT_BITS < bucket)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int at__hist_add(struct hist *h, uint64_t v)
{
    uint64_t bucket = bucket_of(v);
    uint32_t i =
        h->last < h->n && h->used[h->last] >> COUNT_BITS == bucket ? h->last : find(h, bucket);
    if (i == h->n || h->used[i] >> COUNT_BITS != bucket) {
        size_t cap = h->cap;
        if (at__array_grow((void **)&h->used, &cap, h->n, sizeof *h->used, 4) < 0)
            return -ENOMEM;
        h->cap = (uint32_t)cap;
        memmove(&h->used[i + 1], &h->used[i], (h->n - i) * sizeof *h->used);
        h->used[i] = bucket << COUNT_BITS;
        h->n++;
    }
    h->used[i]++;
    h->last = i;
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
    for (uint32_t i = 0; i < h->n; i++) {
        seen += h->used[i] & COUNT_MASK;
        if (seen >= rank) {
            uint64_t mid = middle((unsigned)(h->used[i] >> COUNT_BITS));
            return mid < h->max ? mid : h->max;
        }
    }
    return h->max;
}

void at__hist_free(struct hist *h)
{
    free(h->used);
    *h = (struct hist){0};
}
