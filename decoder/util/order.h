/* The three-way comparison that qsort's comparators chain, one key after another. */
#ifndef ORDER_H
#define ORDER_H

#include <stdint.h>

/* -1, 0 or 1 as x is below, equal to or above y. */
static inline int at__order(uint64_t x, uint64_t y)
{
    return (x > y) - (x < y);
}

#endif
