/* Open addressing with linear probing, at most half full; keys are spread by a multiplicative
 * hash because ids are often small and dense. */
#include <errno.h>
#include <stdlib.h>

#include "idmap.h"

static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int grow(struct idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct idmap bigger = {
        .keys = malloc(cap * sizeof(uint64_t)),
        .values = malloc(cap * sizeof(uint32_t)),
        .used = calloc(cap, 1),
        .cap = cap,
    };
    if (!bigger.keys || !bigger.values || !bigger.used) {
        at__idmap_free(&bigger);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i])
            at__idmap_put(&bigger, m->keys[i], m->values[i]);
    at__idmap_free(m);
    *m = bigger;
    return 0;
}

int at__idmap_put(struct idmap *m, uint64_t key, uint32_t value)
{
    if (2 * (m->n + 1) > m->cap && grow(m) < 0)
        return -ENOMEM;
    size_t i = slot_of(key, m->cap);
    while (m->used[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i]) {
        m->used[i] = 1;
        m->keys[i] = key;
        m->n++;
    }
    m->values[i] = value;
    return 0;
}

int at__idmap_get(const struct idmap *m, uint64_t key, uint32_t *value)
{
    if (m->cap == 0)
        return -ENOENT;
    for (size_t i = slot_of(key, m->cap); m->used[i]; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            *value = m->values[i];
            return 0;
        }
    }
    return -ENOENT;
}

void at__idmap_free(struct idmap *m)
{
    free(m->keys);
    free(m->values);
    free(m->used);
    *m = (struct idmap){0};
}
