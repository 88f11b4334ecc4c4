/* The block pool (preload/ring.c) on its own: taking and releasing blocks, growing the pool
 * when asked, and overwrite mode's steal of the oldest full block, each with exact counts. */
#include <stdio.h>
#include <string.h>

#include "recorder.h"
#include "unit.h"

static int all_zero(struct at_ring_block *block)
{
    const struct at_event *slots = at__block_slots(block);
    static const struct at_event zero;
    for (uint32_t i = 0; i < block->capacity; i++)
        if (memcmp(&slots[i], &zero, sizeof zero) != 0)
            return 0;
    return 1;
}

/* The four blocks ready at start are taken one each, FILLING, owned; a fifth is not there. */
static void test_take(struct at_ring_block *taken[4])
{
    check(at__ring.block_count == 4 && at__ring.free_count == 4, "4 blocks ready at start");
    check(at__ring.block_max == 256, "1 MiB of 4 KiB blocks: at most 256");
    check(at__ring.capacity == (4096 - sizeof(struct at_ring_block)) / sizeof(struct at_event),
          "a block's slots fill it after its header");
    int distinct = 1, owned = 1;
    for (uint32_t i = 0; i < 4; i++) {
        taken[i] = at__ring_take(100 + i, 10 + i);
        owned &= taken[i] && taken[i]->state == AT_BLOCK_FILLING && taken[i]->tid == 100 + i &&
                 taken[i]->seq == 10 + i && taken[i]->used == 0;
        for (uint32_t j = 0; j < i; j++)
            distinct &= taken[i] != taken[j];
    }
    check(owned, "each take gives a FILLING block with its owner and number");
    check(distinct, "no block is taken twice");
    check(at__ring.free_count == 0 && at__ring_free() == 0, "none free after 4 takes");
    check(at__ring_take(200, 20) == NULL, "a fifth take finds nothing");
}

/* A thread that finds nothing free asks once for all; the writer's next pass grows one step. */
static void test_grow(void)
{
    check(at__ring_can_grow(), "the pool can grow below its size");
    check(at__ring_ask_grow() == 1, "the first ask wakes the writer");
    check(at__ring_ask_grow() == 0, "a second ask before the writer looks does not");
    check(at__ring_grow(0) == 4, "asked, a pool of 4 grows by 4 (doubling, in one step)");
    check(at__ring.block_count == 8 && at__ring.free_count == 4, "8 blocks, the 4 new free");
    check(at__ring_grow(4) == 0, "not asked, half free: no growth");
    struct at_ring_block *block = at__ring_take(300, 30);
    check(block && block->capacity == at__ring.capacity, "a grown block is ready to fill");
    at__ring_release(block);
}

/* The writer releases a block: its used slots cleared, FREE again, counted free. */
static void test_release(struct at_ring_block *block)
{
    uint32_t free_before = at__ring.free_count;
    fill_slots(block, 0, 7, 1, 1000);
    block->used = 7;
    block->state = AT_BLOCK_FULL;
    at__ring_release(block);
    check(block->state == AT_BLOCK_FREE && block->tid == 0 && block->used == 0,
          "a released block is FREE and ownerless");
    check(all_zero(block), "its 7 used slots are cleared");
    check(at__ring.free_count == free_before + 1, "the pool counts it free");
}

/* Overwrite mode takes back the FULL block with the smallest number, counting its events. */
static void test_steal(struct at_ring_block *older, struct at_ring_block *newer,
                       struct at_ring_block *partial)
{
    uint32_t cap = at__ring.capacity;
    struct at_lost lost = {0};
    partial->seq = 1; /* the oldest number, but not full: the writer's to write */
    fill_slots(partial, 0, 5, 0, 1);
    partial->used = 5;
    partial->state = AT_BLOCK_FULL;
    check(at__ring_steal_oldest(400, 40, &lost) == NULL, "a partly filled block is not stolen");

    older->seq = 5;
    newer->seq = 9;
    fill_slots(older, 0, cap, 0, 5000);
    fill_slots(newer, 0, cap, 0, 9000);
    older->used = newer->used = cap;
    older->state = newer->state = AT_BLOCK_FULL;
    uint32_t owner = older->tid;
    struct at_ring_block *stolen = at__ring_steal_oldest(400, 40, &lost);
    check(stolen == older, "the full block with the smaller number is stolen");
    check(lost.tid == owner && lost.count == cap && lost.first_tsc == 5000 &&
              lost.last_tsc == 5000 + cap - 1,
          "its events are described: owner, count, time range");
    check(at__ring.header->lost[AT_LOST_OVERWRITTEN] == cap && at__ring_lost_total() == cap,
          "and counted in the ring file as overwritten");
    check(stolen->state == AT_BLOCK_FILLING && stolen->tid == 400 && stolen->seq == 40 &&
              stolen->used == 0 && all_zero(stolen),
          "the stolen block is the thief's, empty");
    check(newer->state == AT_BLOCK_FULL && newer->used == cap, "the newer block stays");
}

int main(void)
{
    make_ring(4, 1, AT_MODE_OVERWRITE);
    struct at_ring_block *taken[4];
    test_take(taken);
    test_grow();
    test_release(taken[3]);
    test_steal(taken[0], taken[1], taken[2]);
    remove_ring();
    check(access(at__ring.path[0] ? at__ring.path : ring_dir, F_OK) != 0,
          "the ring file is removed (its directory empties)");
    return failures != 0;
}
