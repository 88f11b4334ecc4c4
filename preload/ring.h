/* Layer ring (ring.c): the blocks, in a shared file mapping, and the loss counts recovery
 * reads from it. Uses util and config; never calls the writer (record.c waits for it). */
#ifndef AT_PRELOAD_RING_H
#define AT_PRELOAD_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "at_format.h"
#include "config.h"
#include "util.h"

struct at_ring {
    struct at_ring_header *header;
    char *base;      /* the first block */
    size_t map_size; /* address space for block_max blocks */
    dev_t dev;       /* the ring file's identity, checked each time it grows */
    ino_t ino;
    int fd; /* the ring file, high up (at__high_fd); -1 when none is known to be ours */
    uint32_t block_size;  /* bytes, header included */
    uint32_t block_count; /* blocks ready; grown by the writer only, read with acquire */
    uint32_t block_max;   /* the most blocks the pool grows to; lowered by the writer when the
                           * file cannot grow; atomic, relaxed */
    uint32_t grow_wanted; /* a thread found no block ready; atomic */
    uint32_t capacity;    /* event slots per block */
    uint32_t free_count;  /* FREE blocks; atomic */
    uint32_t hint;        /* where the next search for a FREE block starts; atomic, relaxed */
    uint32_t removed;     /* at__ring_remove has run or is running; atomic */
    char path[4096];      /* the ring file, "" when anonymous */
};

extern struct at_ring at__ring;

int at__ring_create(const char *trace_path);
void at__ring_remove(void);
void at__ring_after_fork(void);
struct at_ring_block *at__ring_block(uint32_t index);
static inline struct at_event *at__block_slots(struct at_ring_block *block)
{
    return (struct at_event *)(block + 1);
}
/* Events a block held when it was taken back. */
struct at_lost {
    uint32_t tid;
    uint32_t count;
    uint64_t first_tsc, last_tsc;
};

/* Overwrite mode: takes back the oldest FULL block for thread tid, discarding its events
 * (described in *lost, and counted in the ring file first); NULL when there is none to take. */
struct at_ring_block *at__ring_steal_oldest(uint32_t tid, uint32_t seq, struct at_lost *lost);
/* Takes a FREE block for thread tid (state FILLING); NULL when none is free. Never waits. */
struct at_ring_block *at__ring_take(uint32_t tid, uint32_t seq);
/* Nothing free while the pool can grow: asks for blocks. Returns 1 when the caller is the
 * first to ask since the writer last looked, and so must wake it (one wake-up for all). */
int at__ring_ask_grow(void);
/* The writer is done with a block: clear its used slots and return it to the pool. */
void at__ring_release(struct at_ring_block *block);
/* Blocks free now (a hint: threads take and the writer frees them meanwhile). */
uint32_t at__ring_free(void);
/* Whether the pool is below its size, so that the writer may still add blocks (a hint). */
int at__ring_can_grow(void);
/* The writer prepares one step of blocks when free_seen (at__ring_free at the start of its
 * pass) was low or a thread asked; returns how many it added (0: none needed, or the pool is
 * at its size or cannot grow). */
uint32_t at__ring_grow(uint32_t free_seen);
/* Counts lost events (enum at_lost_reason) in the ring file, where recovery finds them after a
 * kill. Safe from any thread and from signal handlers; before the ring exists the count waits
 * in memory for it. */
void at__ring_count_lost(unsigned reason, uint64_t count);
/* Every event lost in this process so far. */
uint64_t at__ring_lost_total(void);
/* Keeps a clock sample in the ring file's header (the first one and the latest). */
void at__ring_note_clock(uint64_t tsc, uint64_t mono_ns, uint64_t real_ns);

#endif
