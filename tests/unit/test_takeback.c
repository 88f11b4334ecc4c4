/* Taking back the blocks of idle threads (preload/takeback.c) on its own, with threads stood in
 * for by their state: joining and leaving the registry, who owns a block on its ticket (the
 * thread's claim, the writer's settle), and what a pass hands the writer. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "meta.h"
#include "recorder.h"
#include "takeback.h"
#include "unit.h"

struct fake_thread {
    struct at_thread pub;
    struct at_thread_state own;
};

static void fake_init(struct fake_thread *t, uint32_t tid)
{
    memset(t, 0, sizeof *t);
    t->own.pub = &t->pub;
    t->own.tid = tid;
}

/* As the slow path does: a block taken, its room open, then the ticket published. */
static struct at_ring_block *give_block(struct fake_thread *t, uint32_t seq)
{
    struct at_ring_block *block = at__ring_take(t->own.tid, seq);
    t->own.block = block;
    t->pub.slots = at__block_slots(block);
    t->pub.next = 0;
    t->pub.capacity = block->capacity;
    at__takeback_publish(&t->own, block);
    return block;
}

static void test_registry(struct fake_thread *a, struct fake_thread *b)
{
    check(at__takeback_register(&a->own, 1) == 0 && a->own.registry_slot == 1,
          "the first thread registers in slot 1");
    check(at__takeback_register(&b->own, 1) == 0 && b->own.registry_slot == 2,
          "the second in slot 2");
}

/* The thread's exchange on its ticket: the block is its own once, and never again. */
static void test_claim(struct fake_thread *a)
{
    struct at_ring_block *block = give_block(a, 7);
    uint64_t index = (uint64_t)((char *)block - at__ring.base) / at__ring.block_size;
    check(a->own.held == (7ull << 32 | (index + 1)), "the ticket is the block's number and index");
    check(at__takeback_claim(&a->own) == 1 && a->own.held == 0, "the thread claims its block");
    check(at__takeback_claim(&a->own) == 0, "a second claim finds nothing");
    at__ring_release(block);
}

static void sleep_ms(long ms)
{
    struct timespec t = {0, ms * 1000 * 1000};
    nanosleep(&t, NULL);
}

/* a idles with 3 events committed; b idles inside an at_record call (nest 1). A pass after an
 * ask takes back a's block, with its 3 slots, and leaves b's. */
static void test_settle(struct fake_thread *a, struct fake_thread *b)
{
    struct at_ring_block *block_a = give_block(a, 20);
    struct at_ring_block *block_b = give_block(b, 21);
    fill_slots(block_a, 0, 3, 1, 100);
    a->pub.next = 3;
    b->pub.nest = 1;
    struct at_ring_block *taken[4];
    uint32_t barren = AT_TAKEBACK_FIRST;
    int wake = 0;
    check(at__takeback_pass(taken, 4) == 0, "nobody asked: the pass takes nothing");
    check(at__takeback_ask(&barren, &wake) == 1 && wake == 1,
          "a thread asks (as many threads as half the blocks) and wakes the writer");
    wake = 0;
    check(at__takeback_ask(&barren, &wake) == 1 && wake == 0, "a second ask does not wake it");
    check(at__takeback_pass(taken, 4) == 0, "blocks just seen are not idle yet");
    sleep_ms(30); /* past IDLE_NS */
    at__takeback_ask(&barren, &wake);
    uint32_t n = at__takeback_pass(taken, 4);
    check(n == 1 && taken[0] == block_a && block_a->used == 3,
          "the idle thread's block is taken back with its 3 committed slots");
    check(a->own.held == 0 && a->pub.capacity == 0, "its ticket is cleared, its room closed");
    check(at__takeback_claim(&a->own) == 0, "so the thread's claim finds the block gone");
    check(b->own.held != 0 && at__takeback_claim(&b->own) == 1,
          "the thread inside a call keeps its block and claims it");
    b->pub.nest = 0;
    at__ring_release(block_a);
    at__ring_release(block_b);
}

/* Once tracing is off, the finish writes each registered thread's drops as a LOST record. */
static void test_note_drops(struct fake_thread *a, struct fake_thread *b)
{
    uint8_t *records = malloc(AT_META_MAX_PENDING);
    uint32_t count = 0;
    /* the end allocates nothing: the queue has the memory an earlier record gave it */
    at__meta_thread(a->own.tid, 1, "a");
    at__meta_take(records, &count, AT_WAIT_FOREVER);
    at__takeback_remove(&a->own);
    check(a->own.registry_slot == 0 && b->own.registry_slot == 1,
          "a thread leaves the registry; the last takes its slot");
    a->own.drop_count = 4;
    b->own.drop_count = 9;
    b->own.drop_first_tsc = 1;
    at__takeback_note_drops();
    long len = at__meta_take(records, &count, AT_WAIT_FOREVER);
    check(count == 1 && len > 2 && records[0] == AT_META_LOST,
          "one LOST record: the registered thread's");
    check(b->own.drop_count == 0 && a->own.drop_count == 4,
          "its drops are taken, the departed thread's are not");
    free(records);
}

int main(void)
{
    make_ring(256, 1, AT_MODE_BLOCK); /* 4 blocks: two registered threads are half of them */
    struct fake_thread a, b;
    fake_init(&a, 1001);
    fake_init(&b, 1002);
    test_registry(&a, &b);
    test_claim(&a);
    test_settle(&a, &b);
    test_note_drops(&a, &b);
    remove_ring();
    return failures != 0;
}
