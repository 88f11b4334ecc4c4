/* Ids as hmap keys (id, 0). */
#include <errno.h>

#include "idmap.h"

int at__idmap_put(struct idmap *m, uint64_t key, uint32_t value)
{
    return at__hmap_put(&m->map, (struct hkey){key, 0}, value);
}

int at__idmap_get(const struct idmap *m, uint64_t key, uint32_t *value)
{
    const uint32_t *found = at__hmap_get(&m->map, (struct hkey){key, 0});
    if (!found)
        return -ENOENT;
    *value = *found;
    return 0;
}

void at__idmap_free(struct idmap *m)
{
    at__hmap_free(&m->map);
}
