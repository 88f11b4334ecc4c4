/* A hash map from two-word keys to 32-bit values, with removal: the decoder's views key their
 * tables by (trace, actor), (trace, message id), (sender, receiver) and such pairs. */
#ifndef HMAP_H
#define HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hkey {
    uint64_t a, b;
};

struct hmap {
    struct hkey *keys;
    uint32_t *values;
    uint8_t *used;
    size_t cap, n; /* cap is 0 or a power of two */
};

/* Sets key to value, replacing an earlier value. Returns 0 or -ENOMEM. */
int at__hmap_put(struct hmap *m, struct hkey key, uint32_t value);

/* The value of key, or NULL; valid until the next put or del. */
uint32_t *at__hmap_get(const struct hmap *m, struct hkey key);

/* Removes key when present. */
void at__hmap_del(struct hmap *m, struct hkey key);

void at__hmap_free(struct hmap *m);

#endif
