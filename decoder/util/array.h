/* Growing arrays: the one growth policy the decoder's tables share. */
#ifndef ARRAY_H
#define ARRAY_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Makes *array (of *cap elements of size bytes) hold at least n + 1, doubling from 64.
 * Returns 0 or -ENOMEM. */
static inline int at__array_reserve(void **array, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t grown_cap = *cap ? *cap : 64;
    while (grown_cap <= n)
        grown_cap *= 2;
    void *grown = realloc(*array, grown_cap * size);
    if (!grown)
        return -ENOMEM;
    *array = grown;
    *cap = grown_cap;
    return 0;
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
