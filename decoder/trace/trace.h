/* One trace file as the decoder holds it: the mapped bytes, each thread's index of EVENTS
 * frames, and every metadata record, all loaded by one pass over the file (reader.c, meta.c).
 * Event blocks themselves are decoded later, one per thread at a time (block.c, merge.c). */
#ifndef TRACE_H
#define TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "clock.h"
#include "idmap.h"
#include "names.h"

/* An accepted EVENTS frame: enough to find and decode its payload later. */
struct frame_ref {
    uint64_t offset; /* of the frame header in the file */
    uint64_t first_tsc, last_tsc;
    uint32_t seq, count, payload_size, raw_size;
    uint32_t part_offset, part_size; /* this block's columns in the decoded payload */
    uint16_t header_size;
    uint8_t encoding;
    bool recovered; /* a block read from the ring file: offset is into trace.recovered */
};

struct thread {
    uint32_t tid;
    bool exited;
    char *name; /* from the last THREAD record; NULL when there was none */
    uint32_t name_len;
    uint64_t start_tsc, exit_tsc;
    struct frame_ref *frames; /* sorted by seq, then file offset */
    size_t nframes, frames_cap;
    uint64_t events, torn; /* sums over the frames' headers */
    /* "stack" companions waiting for their event (stacks.c); signal handlers nest them */
    struct pending_stack {
        uint64_t actor;
        uint32_t id; /* 0: the capture was skipped */
        uint8_t kind;
    } pending_stacks[4];
    uint8_t npending_stacks;
};

struct lost {
    uint32_t tid;
    uint8_t reason; /* enum at_lost_reason */
    uint64_t count, first_tsc, last_tsc;
};

/* A PATCH record: what entry patching did to one function. One allocation holds the three
 * strings, from symbol. */
struct patch_record {
    uint8_t status; /* enum at_patch_status */
    char *symbol, *object, *why;
};

struct process {
    bool known;
    uint64_t pid, ppid, block_slots;
    uint8_t mode;
    char *exe;
    char *ring_path; /* the recorder's ring file (recover.c); "" when it had none */
    char *boot_id;   /* the kernel's boot id: traces with the same one share CLOCK_MONOTONIC */
    char *host;      /* the host name; both "" when unknown (older traces) */
};

struct end_record {
    bool seen;
    uint64_t events_written, events_dropped, threads, blocks_written;
};

struct trace {
    const char *path;
    FILE *diag; /* where damage and warnings go; NULL: nowhere */
    const uint8_t *data;
    size_t size;
    bool mapped;
    uint8_t *prefix; /* the first bytes of a stream that is not a whole trace; data points here */
    dev_t dev;       /* identify the file (for standard input: the pipe), so that the output cannot
                      * overwrite it and the same file is not merged with itself */
    ino_t ino;
    uint16_t version_major, version_minor;

    struct process process;
    struct end_record end;
    struct names names;
    struct clock_sample *samples;
    size_t nsamples, samples_cap;
    struct clock_map clock;
    struct thread *threads; /* sorted by tid once the file is read */
    size_t nthreads, threads_cap;
    struct idmap thread_index; /* tid -> index into threads */
    struct lost *lost;
    size_t nlost, lost_cap;
    struct patch_record *patches;
    size_t npatches, patches_cap;

    uint64_t meta_raw;       /* decoded bytes of the META frames loaded (reader.c's budget) */
    uint64_t damaged;        /* damaged frames, found by the reader or when decoding a block */
    bool cut;                /* the file ends inside its header or a frame */
    uint64_t torn;           /* sum of the torn fields of accepted EVENTS frames */
    uint64_t events_decoded; /* counted by the merge */

    uint8_t *recovered; /* the columns of blocks recovered from the ring file (recover.c) */
    size_t recovered_len, recovered_cap;
    uint64_t recovered_events;
    /* what recovery took from the ring file's header: losses the trace does not list, clock
     * samples it lacks */
    struct lost ring_lost[2];
    size_t nring_lost;
    struct clock_sample ring_clock[2];
    size_t nring_clock;
    bool ring_read;    /* recovery read the ring file */
    bool ring_written; /* a RECOVERED record: tracedecode --recover wrote the ring's events in */
    size_t whole_end;  /* the end of the last whole frame: where a cut tail starts */

    struct stack_table *stacks; /* MODULE and STACK records (stacks.c); NULL when none */
};

struct unpacker;

/* Opens path, checks the file header and reads every frame header and META frame, reporting
 * damage to diag. Returns 0 (the trace may still be damaged or cut: see damaged, cut, end),
 * -EBADMSG when the file is not a trace, -ENOTSUP for an unknown major version, -ENOMEM, or the
 * negative errno of a failed open or read. On error t is already closed. */
int at__trace_open(struct trace *t, const char *path, FILE *diag, struct unpacker *u);

/* After a kill: when t has no END record and the ring file its PROCESS record names is still
 * there (and its process is gone, or force), adds the blocks holding events the trace lacks to
 * their threads, as frames marked recovered, and reports how many. Returns 0 (also when there was
 * nothing to recover) or -ENOMEM. */
int at__trace_recover(struct trace *t, bool force);

/* Whether process pid, which started at start_ticks (field 22 of /proc/PID/stat; 0: unknown),
 * is still running here: a process with that pid and start time, or with that pid when the
 * start time is unknown, that has a thread that is not a zombie (a killed process its parent
 * has not reaped runs no thread). */
bool at__process_running(uint64_t pid, uint64_t start_ticks);

/* The pieces of at__trace_open that a follower (follow.c) uses on a file that grows: */
/* checks the file header of t->data[0..t->size) (at least 16 bytes) and sets *start to the
 * first frame; returns 0, -EBADMSG or -ENOTSUP after saying why on t->diag */
int at__trace_check_header(struct trace *t, size_t *start);
struct at_frame_header;
/* the checks of FORMAT.md section 3 on the frame at pos: NULL when it passes, else why not,
 * with *cut set when it runs past the end of the file */
const char *at__frame_check(const struct trace *t, size_t pos, struct at_frame_header *h,
                            bool *cut);
/* the offset of the next frame magic at or after from, or t->size */
size_t at__frame_resync(const struct trace *t, size_t from);
/* loads a frame that passed its checks: a META frame's records, or an EVENTS frame's blocks
 * appended to their threads' frame lists. Returns 0 or -ENOMEM. */
int at__frame_load(struct trace *t, size_t pos, const struct at_frame_header *h,
                   struct unpacker *u);

/* Frees t; accepts a trace that was zeroed and never opened. */
void at__trace_close(struct trace *t);

/* Reports damage at a file offset ("damaged frame at offset N: why; skipping") and counts it. */
void at__trace_damage(struct trace *t, uint64_t offset, const char *why);

/* Prints "tracedecode: PATH: message" to t->diag. */
void at__trace_warn(const struct trace *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The thread table (threads.c). The thread with this tid, added when new. NULL on -ENOMEM. */
struct thread *at__trace_thread(struct trace *t, uint32_t tid);

/* Appends an EVENTS frame to the thread's list and counts its events. Returns 0 or -ENOMEM. */
int at__thread_add_frame(struct thread *th, const struct frame_ref *f);

/* Once the file is read: each thread's frames in sequence order, the threads in tid order.
 * Returns 0 or -ENOMEM. */
int at__threads_sort(struct trace *t);

/* Frees every thread and the table. */
void at__threads_free(struct trace *t);

/* Loads the `count` records of a decoded META payload. Returns 0, -EINVAL for a malformed
 * record (the records before it are kept), or -ENOMEM. */
int at__meta_load(struct trace *t, const uint8_t *p, size_t len, uint32_t count);

/* Frees the strings of a PROCESS record (meta.c). */
void at__process_free(struct process *p);

/* Writes all `len` bytes to fd, again after EINTR or a short write. Returns 0 or -errno. */
int at__write_all(int fd, const void *data, size_t len);

#endif
