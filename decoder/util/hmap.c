/* Open addressing with linear probing, at most half full. Removal shifts the entries of the
 * probe run back instead of leaving tombstones, so a table that sees as many removals as
 * insertions (messages in flight) never fills with dead slots. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "hmap.h"

/* The keys come from the trace, so the hash takes its multipliers at random, once per
 * process: with fixed ones a crafted trace of a few hundred bytes put every actor id in one
 * probe run (100,000 events then took 17 s in --format stats, and the time grew with their
 * square). Multiply-shift hashing with random odd multipliers leaves a trace nothing to aim
 * at; no output depends on the order of the slots. */
static uint64_t multiplier[2];

__attribute__((constructor)) static void choose_multipliers(void)
{
    if (getrandom(multiplier, sizeof multiplier, GRND_NONBLOCK) != sizeof multiplier) {
        struct timespec now; /* no entropy yet (early boot): the clock is better than nothing */
        clock_gettime(CLOCK_MONOTONIC, &now);
        multiplier[0] = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15ull;
        multiplier[1] = (uint64_t)now.tv_sec * 0xC2B2AE3D27D4EB4Full ^ (uintptr_t)&now;
    }
    multiplier[0] |= 1;
    multiplier[1] |= 1;
}

/* The top bits of the product: the well-mixed ones. */
static size_t slot_of(struct hkey k, size_t cap)
{
    uint64_t h = k.a * multiplier[0] + k.b * multiplier[1];
    return (size_t)(h >> (__builtin_clzll(cap) + 1));
}

static bool same(struct hkey x, struct hkey y)
{
    return x.a == y.a && x.b == y.b;
}

static int grow(struct hmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct hmap bigger = {
        .keys = malloc(cap * sizeof(struct hkey)),
        .values = malloc(cap * sizeof(uint32_t)),
        .used = calloc(cap, 1),
        .cap = cap,
    };
    if (!bigger.keys || !bigger.values || !bigger.used) {
        at__hmap_free(&bigger);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i])
            at__hmap_put(&bigger, m->keys[i], m->values[i]);
    at__hmap_free(m);
    *m = bigger;
    return 0;
}

int at__hmap_put(struct hmap *m, struct hkey key, uint32_t value)
{
    if (2 * (m->n + 1) > m->cap && grow(m) < 0)
        return -ENOMEM;
    size_t i = slot_of(key, m->cap);
    while (m->used[i] && !same(m->keys[i], key))
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i]) {
        m->used[i] = 1;
        m->keys[i] = key;
        m->n++;
    }
    m->values[i] = value;
    return 0;
}

static size_t find(const struct hmap *m, struct hkey key)
{
    if (m->cap == 0)
        return SIZE_MAX;
    for (size_t i = slot_of(key, m->cap); m->used[i]; i = (i + 1) & (m->cap - 1))
        if (same(m->keys[i], key))
            return i;
    return SIZE_MAX;
}

uint32_t *at__hmap_get(const struct hmap *m, struct hkey key)
{
    size_t i = find(m, key);
    return i == SIZE_MAX ? NULL : &m->values[i];
}

/* Backward-shift deletion: an entry later in the run moves into the hole when its home slot
 * does not lie cyclically between the hole and itself. */
void at__hmap_del(struct hmap *m, struct hkey key)
{
    size_t hole = find(m, key);
    if (hole == SIZE_MAX)
        return;
    size_t mask = m->cap - 1;
    for (size_t j = (hole + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->values[hole] = m->values[j];
            hole = j;
        }
    }
    m->used[hole] = 0;
    m->n--;
}

void at__hmap_free(struct hmap *m)
{
    free(m->keys);
    free(m->values);
    free(m->used);
    *m = (struct hmap){0};
}
