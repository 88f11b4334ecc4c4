/* Argument parsing shared by the example programs. */
#ifndef REFRT_EXAMPLES_ARGS_H
#define REFRT_EXAMPLES_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* Parses a decimal count in [min, max]. */
static inline bool parse_count(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

#endif
