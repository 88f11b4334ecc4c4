/* A cursor over one metadata record body (meta.c, stacks.c). */
#ifndef BODY_H
#define BODY_H

#include <stdbool.h>
#include <stdint.h>

#include "at_codec.h"

/* Reading past the end sets bad instead of failing each call. */
struct body {
    const uint8_t *p, *end;
    bool bad;
};

/* The next varint field; 0 once bad. */
static inline uint64_t at__body_num(struct body *b)
{
    uint64_t v = 0;
    if (!b->bad && at_varint_get(&b->p, b->end, &v) < 0)
        b->bad = true;
    return b->bad ? 0 : v;
}

#endif
