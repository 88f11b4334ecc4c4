/* The slow path (preload/record.c) on a real ring, with the writer stood in for: the test
 * records through at_record, as a shim does, and sees the blocks handed over, the switch to a
 * new block, and the drops counted when none is free (drop mode). */
#include <stdio.h>
#include <string.h>

#include "at_codec.h"
#include "at_vectors.h"
#include "meta.h"
#include "record.h"
#include "recorder.h"
#include "unit.h"
#include "writer.h"

/* ---- the layers above record.c, stood in for ---- */

static struct at_ring_block *submitted[8];
static uint32_t submitted_used[8];
static unsigned submitted_count, wakes;

uint64_t at__threads_total;
uint64_t at__stack_kinds; /* no stacks */

void at__stack_capture(unsigned kind, uint64_t actor)
{
    (void)kind;
    (void)actor;
}

void at__writer_submit(struct at_ring_block *block, uint32_t used)
{
    submitted[submitted_count] = block;
    submitted_used[submitted_count++] = used;
    block->used = used;
    /* release: as the writer's, for a reader of the block */
    __atomic_store_n(&block->state, AT_BLOCK_FULL, __ATOMIC_RELEASE);
}

/* The writer frees nothing here: the wait is only its time. */
void at__writer_wait_free(uint64_t timeout_ns)
{
    struct timespec t = {0, (long)(timeout_ns < 10000000 ? timeout_ns : 10000000)};
    nanosleep(&t, NULL);
}

/* ... nor adds any: the pool never moves */
uint32_t at__writer_pool_moves(void)
{
    return 0;
}

void at__writer_wake(void)
{
    wakes++;
}

/* lifecycle.c's entry, the recorder already running */
AT_GENERAL_REGS_ONLY void at__record_slow(unsigned kind, uint64_t actor, uint64_t peer,
                                          uint64_t msg, uint32_t name, unsigned path)
{
    if (!at__record_skips())
        AT_VECTORS_KEPT(at__record_event(AT_STATE_RUNNING, kind, actor, peer, msg, name, path));
}

/* ---- the tests ---- */

static void record(uint64_t msg)
{
    at_record(AT_EV_SEND, 7, 8, msg, 0, 0);
}

/* Whether slots [0, count) of block hold messages first_msg, first_msg + 1, ... */
static int holds_in_order(struct at_ring_block *block, uint32_t count, uint64_t first_msg)
{
    const struct at_event *slots = at__block_slots(block);
    for (uint32_t i = 0; i < count; i++)
        if (slots[i].kind != AT_EV_SEND || slots[i].msg != first_msg + i)
            return 0;
    return 1;
}

/* capacity + 5 events: the first block filled and handed over whole, the rest in a second. */
static void test_switch(uint32_t cap)
{
    for (uint64_t msg = 0; msg < cap + 5; msg++)
        record(msg);
    check(at__thread.tid != 0 && at__threads_total == 1, "the first event made the thread known");
    check(submitted_count == 1 && submitted_used[0] == cap,
          "one block handed over, all its slots used");
    check(holds_in_order(submitted[0], cap, 0), "it holds the first events, in order");
    struct at_ring_block *current = at__thread.block;
    check(current && current != submitted[0] && at__self.next == 5 &&
              holds_in_order(current, 5, cap),
          "the next 5 are in a new current block");
    check(at__self.nest == 0 && at__thread.drop_count == 0, "no call left open, nothing dropped");
}

/* No block free (the rest taken): the current block fills, and 7 more events are dropped and
 * counted; once a block is free again the drops go into a LOST record. */
static void test_drops(uint32_t cap)
{
    while (at__ring_take(9999, 0))
        ;
    for (uint64_t msg = 0; msg < cap - 5 + 7; msg++)
        record(cap + 5 + msg);
    check(submitted_count == 2 && submitted_used[1] == cap, "the full block was handed over");
    check(at__thread.block == NULL, "the thread has no block");
    check(at__thread.drop_count == 7, "7 drops pending for the thread");
    check(at__ring.header->lost[AT_LOST_DROPPED] == 7 && at__ring_lost_total() == 7,
          "7 counted as dropped in the ring file");

    uint8_t *records = malloc(AT_META_MAX_PENDING);
    uint32_t count = 0;
    at__meta_take(records, &count, AT_WAIT_FOREVER); /* the thread's name */
    at__ring_release(submitted[0]);
    record(1000);
    check(at__thread.block == submitted[0] && at__self.next == 1, "a free block is taken again");
    long len = at__meta_take(records, &count, AT_WAIT_FOREVER);
    const uint8_t *p = records + 2, *end = records + len;
    uint64_t tid = 0, reason = 0, dropped = 0;
    int parsed = len > 2 && records[0] == AT_META_LOST && at_varint_get(&p, end, &tid) == 0 &&
                 at_varint_get(&p, end, &reason) == 0 && at_varint_get(&p, end, &dropped) == 0;
    check(count == 1 && parsed && tid == at__thread.tid && reason == AT_LOST_DROPPED &&
              dropped == 7,
          "one LOST record: the thread's 7 drops");
    check(at__thread.drop_count == 0, "and none pending");
    free(records);
}

int main(void)
{
    make_ring(256, 1, AT_MODE_DROP); /* 4 blocks, the pool's size: it cannot grow */
    if (at__record_init() < 0)
        return 2;
    uint32_t cap = at__ring.capacity;
    test_switch(cap);
    test_drops(cap);
    remove_ring();
    return failures != 0;
}
