/* Growing arrays: every array or buffer of the decoder that grows by doubling grows here (the
 * hash tables of hmap.c rehash on growth and size themselves). Those sized otherwise do it
 * themselves: to the exact need (the output buffer, the timeline's scratch, a frame's events,
 * the lost counts with the ring's appended, top's order, a filter's values), to twice plus what
 * is asked (Perfetto's stack data), to the id given (the tables of stacks.c). */
#ifndef ARRAY_H
#define ARRAY_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Makes *array (of *cap elements of size bytes) hold at least n + 1, doubling from first.
 * Returns 0 or -ENOMEM. */
static inline int at__array_grow(void **array, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t grown_cap = *cap ? *cap : first;
    while (grown_cap <= n)
        grown_cap *= 2;
    void *grown = realloc(*array, grown_cap * size);
    if (!grown)
        return -ENOMEM;
    *array = grown;
    *cap = grown_cap;
    return 0;
}

/* The same, doubling from 64: for tables of entries. */
static inline int at__array_reserve(void **array, size_t *cap, size_t n, size_t size)
{
    return at__array_grow(array, cap, n, size, 64);
}

/* The same, with the new elements zeroed: for tables indexed by an id given elsewhere. */
static inline int at__array_reserve_zeroed(void **array, size_t *cap, size_t n, size_t size)
{
    size_t old = *cap;
    int err = at__array_reserve(array, cap, n, size);
    if (err == 0 && *cap > old)
        memset((char *)*array + old * size, 0, (*cap - old) * size);
    return err;
}

#endif
