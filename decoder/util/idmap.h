/* A map from 64-bit ids to 32-bit indexes, for thread ids and name ids: the two-word hash map
 * of hmap.h with the second word 0. */
#ifndef IDMAP_H
#define IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

struct idmap {
    struct hmap map;
};

/* Sets key to value, replacing an earlier value. Returns 0 or -ENOMEM. */
int at__idmap_put(struct idmap *m, uint64_t key, uint32_t value);

/* Returns 0 and sets *value, or -ENOENT. */
int at__idmap_get(const struct idmap *m, uint64_t key, uint32_t *value);

void at__idmap_free(struct idmap *m);

#endif
