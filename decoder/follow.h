/* Following traces while their processes run (tracedecode --follow, the top view): the frames
 * the writer appends, read as they come, and with --ring the events still in the ring file,
 * each event handed out once, in time order within what can no longer change. */
#ifndef FOLLOW_H
#define FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decode.h"
#include "hmap.h"
#include "merge.h"

/* An event read and not yet handed out. */
struct queued {
    struct at_event ev;
    bool ring; /* read from the ring file */
};

/* One thread's events waiting, in recording order, and its ring block being filled. */
struct follow_queue {
    struct queued *q;
    size_t head, n, cap;
    bool open; /* part of ring block open_seq was read; the rest is yet to come */
    uint32_t open_seq;
    bool in_file; /* the file has a frame of the thread: the latest block's is file_seq */
    uint32_t file_seq;
};

/* The ring file of a running process, mapped, and what was taken from each of its blocks. */
struct follow_ring {
    int fd; /* -1: not open */
    const uint8_t *data;
    size_t size;
    bool gone;         /* there is none, or it was removed (the process ended) */
    struct hmap slots; /* (tid, seq) -> slots of the block read */
    struct hmap taken; /* (tid, seq) -> events handed out from them: the frame skips these */
};

struct follow_file {
    int fd;                      /* -1 until the file exists */
    size_t pos;                  /* the next frame */
    size_t suspect;              /* a frame that failed its checks on the last poll (0: none) */
    bool started;                /* the file header was read */
    bool ended;                  /* read to its END record, or its process is gone */
    size_t nsamples;             /* clock samples the conversion was built from */
    struct follow_queue *queues; /* by thread index */
    size_t nqueues;
    struct follow_ring ring;
};

struct follower {
    struct decode d; /* one trace per file: names, clocks, threads, losses read so far */
    struct follow_file *files;
    bool ring; /* read the ring files too */
    struct at_event *scratch;
    size_t scratch_cap;
    struct budget budget;
    struct summary counts; /* events handed out, stacks */
};

/* Opens nothing yet: files that do not exist are waited for. Returns 0 or -ENOMEM. */
int at__follow_init(struct follower *f, const char *const *paths, size_t n, bool ring, FILE *diag);

/* Reads what the files and rings gained. A frame that fails its checks at the end of what was
 * written is read again on the next poll before it counts as damaged; a cut frame is waited
 * for. final: the last poll (interrupted): the cut tail is reported, as a decode would.
 * Returns 1 when every file has ended, 0 when some are still growing, or a negative errno
 * (-EBADMSG, -ENOTSUP: a file that is not a trace of a version this reads). */
int at__follow_poll(struct follower *f, bool final);

typedef int (*follow_emit)(void *ctx, const struct decode *d, const struct merged *e);

/* Hands out, in time order, each event no later one can precede: those up to the last clock
 * sample written (a later sample cannot change their ts_ns, and their names were written
 * before it), all of them once a file has ended or when all is set. Returns 0 or emit's
 * error. */
int at__follow_release(struct follower *f, bool all, follow_emit emit, void *ctx);

/* Events read and not handed out: those after the last clock sample of a file still growing. */
uint64_t at__follow_pending(const struct follower *f);

void at__follow_free(struct follower *f);

#endif
