/* What the unit tests of the recorder's layers (test_ring, test_takeback, test_record) share:
 * a ring of a chosen shape in a directory of its own, with the recorder marked running. */
#ifndef AT_UNIT_RECORDER_H
#define AT_UNIT_RECORDER_H

#include <stdlib.h>
#include <unistd.h>

#include "ring.h"

static char ring_dir[] = "/tmp/at-unit-XXXXXX";

/* A ring of block_kb blocks, at most buffer_mb MiB of them (4 at least). Exits on failure. */
static inline void make_ring(unsigned block_kb, unsigned buffer_mb, unsigned mode)
{
    if (!mkdtemp(ring_dir)) {
        perror("mkdtemp");
        exit(2);
    }
    at__config.ring_dir = ring_dir;
    at__config.block_kb = block_kb;
    at__config.buffer_mb = buffer_mb;
    at__config.mode = mode;
    /* relaxed: one thread so far */
    __atomic_store_n(&at__state, AT_STATE_RUNNING, __ATOMIC_RELAXED);
    if (at__ring_create("/tmp/at-unit.trace") < 0 || !at__ring.path[0]) {
        fprintf(stderr, "cannot create the ring in %s\n", ring_dir);
        exit(2);
    }
}

static inline void remove_ring(void)
{
    at__ring_remove();
    rmdir(ring_dir);
}

/* Commits `count` events into block's slots [from, from + count), msg = first_msg + i, tsc
 * rising from first_tsc. */
static inline void fill_slots(struct at_ring_block *block, uint32_t from, uint32_t count,
                              uint64_t first_msg, uint64_t first_tsc)
{
    struct at_event *slots = at__block_slots(block);
    for (uint32_t i = 0; i < count; i++) {
        struct at_event *ev = &slots[from + i];
        ev->tsc = first_tsc + i;
        ev->msg = first_msg + i;
        /* release: as at__fill's commit */
        __atomic_store_n(&ev->kind, 1, __ATOMIC_RELEASE);
    }
}

#endif
