/* The events of every thread of every trace, on one timeline (merge.c explains the order). */
#ifndef MERGE_H
#define MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "at_format.h"
#include "block.h"
#include "trace.h"

/* One thread's events: its current decoded block (used up when pos == n: its next one is
 * decoded when the stream reaches the top of the heap) and its place in the frame list. */
struct stream {
    struct trace *trace;
    struct thread *thread;
    size_t next_frame;
    struct at_event *events; /* the current block */
    size_t cap;
    uint32_t n, pos;
    uint64_t ns, tsc; /* the merge key: of events[pos], or when the block is used up, of the
                       * next frame's first_tsc, which no event of that frame is below */
    size_t clock_hint;
    uint32_t index; /* position in the (trace, tid) order; breaks ties */
    bool recovered; /* the current block came from the ring file */
};

struct merge {
    struct stream *streams;
    size_t nstreams;
    struct stream **heap; /* streams with events left; the earliest head first */
    size_t nheap;
    int pending; /* the head of heap[0] was handed out and must be stepped past */
    struct unpacker *unpacker;
    struct prefetch *prefetch; /* the helper thread decoding ahead; NULL: none */
    struct budget budget;      /* what decoded blocks may take (block.h) */
    uint64_t budget_total;
};

struct merged {
    struct trace *trace;
    struct thread *thread;
    const struct at_event *ev; /* valid until the next at__merge_next */
    uint64_t ts_ns;
    bool recovered; /* recovered from the ring file after the process was killed */
    uint32_t stack; /* its call stack's id, AT_STACK_SKIPPED, or 0: none (set by decode.c) */
    bool ring;      /* read from the ring file of a running process (follow.c --ring) */
};

/* Prepares the merge of traces[0..n); blocks are decoded as they are needed. Returns 0 or
 * -ENOMEM. */
int at__merge_init(struct merge *m, struct trace *traces, size_t n, struct unpacker *u);

/* The next event in time order: returns 1 and fills out, 0 at the end, or -ENOMEM. Damaged
 * blocks are reported on their trace and skipped. */
int at__merge_next(struct merge *m, struct merged *out);

/* Starts decoding ahead on a helper thread (prefetch.c), after at__merge_init. Returns 0 or a
 * negative errno; the merge works the same either way. */
int at__merge_prefetch(struct merge *m);

void at__merge_free(struct merge *m);

#endif
