/* A map from 64-bit ids to 32-bit indexes (open addressing), for thread ids and name ids. */
#ifndef IDMAP_H
#define IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
    uint64_t *keys;
    uint32_t *values;
    uint8_t *used;
    size_t cap, n; /* cap is 0 or a power of two */
};

/* Sets key to value, replacing an earlier value. Returns 0 or -ENOMEM. */
int at__idmap_put(struct idmap *m, uint64_t key, uint32_t value);

/* Returns 0 and sets *value, or -ENOENT. */
int at__idmap_get(const struct idmap *m, uint64_t key, uint32_t *value);

void at__idmap_free(struct idmap *m);

#endif
