/* Declarations shared by the files of the recorder (preload/). Not for shims: they use
 * include/actortrace.h. */
#ifndef AT_RECORDER_H
#define AT_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "actortrace.h"

#define AT_RETURN_IF_ERROR(expr)     \
    do {                             \
        int at_err_ = (expr);        \
        if (at_err_ < 0)             \
            return at_err_;          \
    } while (0)

/* ---- config.c: the ACTORTRACE_* environment variables ---- */

struct at_config {
    const char *out_pattern; /* ACTORTRACE_OUT */
    const char *ring_dir;    /* ACTORTRACE_RING_DIR */
    unsigned block_kb;       /* ACTORTRACE_BLOCK_KB */
    unsigned buffer_mb;      /* ACTORTRACE_BUFFER_MB */
    unsigned mode;           /* ACTORTRACE_MODE: enum at_mode */
    int zstd_level;          /* ACTORTRACE_ZSTD_LEVEL */
    unsigned predicted;      /* ACTORTRACE_ENCODING=predicted: at_events_predict, not columns */
    unsigned writer_nice;    /* ACTORTRACE_WRITER_NICE: nice levels below the program's */
    uint64_t stack_kinds;    /* ACTORTRACE_STACKS: bit k captures a stack on kind k */
    unsigned stack_depth;    /* ACTORTRACE_STACK_DEPTH: frames kept, at most AT_STACK_DEPTH_MAX */
    unsigned stack_every;    /* ACTORTRACE_STACK_EVERY: 1 in N events of those kinds */
};

extern struct at_config at__config;

/* Reads the environment into at__config; reports unknown or malformed variables on stderr. */
void at__config_load(void);
/* Reads the ACTORTRACE_STACK* variables into at__config (stacks.c calls it at load time). */
void at__config_stacks(void);

/* ---- stackroom.c: the stack a thread has left ---- */

/* Stack the recorder's start needs beyond its caller's frame (7.3 KiB measured, the first
 * call's symbol binding included), and a capture (4.4 to 5 KiB; 9.4 KiB for the process's
 * first, which fills libunwind's caches): tests/targets/progs/stack_room measure,
 * docs/STACKS.md. */
#define AT_START_STACK (16 * 1024)
#define AT_CAPTURE_STACK (16 * 1024)

/* Reads the calling thread's stack bounds, once per thread. Not in a signal handler. */
void at__stack_room_learn(void);

/* Bytes of stack left below the caller, or SIZE_MAX when not known: the bounds are not read
 * yet, or the stack pointer is outside them (a signal stack, a coroutine's). Signal-safe. */
size_t at__stack_room(void);

/* ---- stacks.c: call stacks on chosen event kinds ---- */

#define AT_STACK_DEPTH_MAX 32
/* The writer thread: symbolizes the stacks captured since the last call and queues their
 * MODULE and STACK records. Never called on the recording path. While finishing (a thread
 * stopped for good may hold malloc's lock) it allocates nothing: what does not fit the
 * metadata queue's memory is left out. */
void at__stacks_publish(int finishing);
/* Whether a capture runs on this thread. A jump out of a signal handler (signals.c) leaves any
 * capture it interrupted: the flag goes back to what it was when the handler around began. */
uint32_t at__stack_busy(void);
void at__stack_set_busy(uint32_t busy);

/* ---- tracefile.c ---- */

/* Creates the trace file named by ACTORTRACE_OUT into path; returns its fd or a negative
 * errno (path holds the name tried). */
int at__trace_create(char *path, size_t cap, int forked_child);

/* ---- signals.c ---- */

/* Takes over the fatal signals the program leaves at their default action, keeping every
 * handler the program installs (before or after) in front of ours. */
void at__signals_install(void);

/* ---- jumps.c: longjmp and friends, wrapped ---- */

/* Resolves the jump functions (before a signal handler may need them) and checks that a
 * jmp_buf's stack pointer can be read. */
void at__jumps_resolve(void);

/* ---- lifecycle.c: the recorder's state ---- */

enum at_state {
    AT_STATE_UNINIT = 0,   /* no event yet (in this process: a forked child starts here) */
    AT_STATE_STARTING = 1, /* one thread is starting it; others that record wait */
    AT_STATE_RUNNING = 2,
    AT_STATE_OFF = 3,      /* not tracing: failed to start, or stopped */
};

/* enum at_state; written with release by lifecycle.c, read with acquire anywhere. */
extern int at__state;

extern pid_t at__pid; /* this process image (a vfork child is another process on its memory) */

#define AT_WAIT_FOREVER UINT64_MAX
/* How long a fatal signal, _exit or exec waits for the writer to finish the trace. */
#define AT_FINISH_DEADLINE_NS (5 * 1000 * 1000 * 1000ull)

/* Starts the recorder if nobody has; returns the state after. Safe to call from any thread. */
int at__ensure_started(void);
/* Stops the recorder: every committed event and the end record go into the trace. Waits up to
 * timeout_ns for the writer (and first for a start under way on another thread); returns 0,
 * -ETIMEDOUT (the ring file is kept for recovery), -EALREADY (not running; before the first
 * event, no start may begin after this) or -ECHILD (called in a vfork child, which must not
 * touch it). */
int at__finish(uint64_t timeout_ns);
/* One line on stderr, prefixed "actortrace: ". No stdio stream, no allocation. */
void at__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t at__clock_ns(clockid_t clock);
/* The CLOCK_MONOTONIC time timeout_ns from now, for pthread_mutex_clocklock. */
static inline struct timespec at__monotonic_after(uint64_t timeout_ns)
{
    uint64_t at = at__clock_ns(CLOCK_MONOTONIC) + timeout_ns;
    return (struct timespec){(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
}

/* futex(2) by the syscall instruction itself: the recorder's own waits must not pass through
 * libc's syscall(), which a shim may wrap. Returns the kernel's result (negative errno). */
static inline long at__futex(uint32_t *word, int op, uint32_t value,
                             const struct timespec *timeout)
{
    long ret;
    register long r10 __asm__("r10") = (long)timeout;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(202L /* SYS_futex on x86-64 */), "D"(word), "S"((long)op),
                       "d"((long)value), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
}

/* ---- ring.c: the blocks, in a shared file mapping ---- */

struct at_ring {
    struct at_ring_header *header;
    char *base;          /* the first block */
    size_t map_size;     /* address space for block_max blocks */
    dev_t dev;           /* the ring file's identity, checked each time it grows */
    ino_t ino;
    uint32_t block_size; /* bytes, header included */
    uint32_t block_count; /* blocks ready; grown by the writer only, read with acquire */
    uint32_t block_max;  /* the most blocks the pool grows to; lowered by the writer when the
                          * file cannot grow; atomic, relaxed */
    uint32_t grow_wanted; /* a thread found no block ready; atomic */
    uint32_t capacity;   /* event slots per block */
    uint32_t free_count; /* FREE blocks; atomic */
    uint32_t hint;       /* where the next search for a FREE block starts; atomic, relaxed */
    char path[4096];     /* the ring file, "" when anonymous */
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
/* Takes a FREE block for thread tid (state FILLING); NULL when none is free. */
struct at_ring_block *at__ring_take(uint32_t tid, uint32_t seq);
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

/* ---- writer.c: the background thread ---- */

int at__writer_start(int fd, const char *trace_path);
/* Hands a FILLING block with `used` slots taken to the writer. */
void at__writer_submit(struct at_ring_block *block, uint32_t used);
/* Writes a block taken back from a thread (takeback.c), `used` slots, and frees it. */
void at__writer_write_taken(struct at_ring_block *block, uint32_t used);
/* Waits (block mode) until the writer frees a block or `timeout_ns` passes. */
void at__writer_wait_free(uint64_t timeout_ns);
/* Asks the writer to drain everything and write the end record, and waits up to timeout_ns
 * for it. Only sets a flag, wakes the writer and waits (async-signal-safe): it never joins,
 * closes, frees or takes a lock, so it may be called from a signal handler or _exit whatever
 * the program's threads hold. Returns 0 or -ETIMEDOUT (what is not written stays in the ring
 * file for recovery). */
int at__writer_stop(uint64_t timeout_ns);
/* Wakes the writer (to prepare blocks a thread needs). */
void at__writer_wake(void);
/* Overwrite mode: write the blocks now. Async-signal-safe. */
void at__writer_request_dump(void);
void at__writer_after_fork(void);

/* ---- meta.c: metadata records waiting for the writer ---- */

int at__meta_thread(uint32_t tid, uint64_t tsc, const char *name);
int at__meta_thread_exit(uint32_t tid, uint64_t tsc);
int at__meta_lost(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                  uint64_t last_tsc);
/* The same from a signal handler: only if the lock is free and the queue has room; 0 or a
 * negative errno. */
int at__meta_lost_nowait(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                         uint64_t last_tsc);
int at__meta_clock(void);
void at__meta_clock_fields(uint64_t fields[3]);
int at__meta_process(const char *ring_path);
/* The process's start time in clock ticks after boot (field 22 of /proc/self/stat): it tells
 * this process from another with the same pid. 0 when unknown. */
uint64_t at__start_ticks(void);
/* A PATCH record (patch.c); kept, like names, for a forked child's trace too. */
int at__meta_patch(unsigned status, const char *symbol, const char *object, const char *why);
/* Past this, records are refused (and counted) rather than memory grown; it also keeps one
 * META frame under the format's 16 MiB payload limit. */
#define AT_META_MAX_PENDING (8u << 20)
/* Copies the pending records to out (room for AT_META_MAX_PENDING bytes) and empties the
 * queue; *count is their number. Waits at most timeout_ns for the lock (AT_WAIT_FOREVER: no
 * limit): at the end, the thread holding it may be one a fatal signal or _exit stopped for
 * good. Returns the size in bytes, or -ETIMEDOUT. */
long at__meta_take(uint8_t *out, uint32_t *count, uint64_t timeout_ns);
/* Encodes a record of `n` numbers at out (room for 1 + (n + 1) * AT_VARINT_MAX bytes); returns
 * its length. No lock, no allocation. */
size_t at__meta_encode(uint8_t *out, unsigned type, const uint64_t *fields, unsigned n);
/* Queues one record encoded by the caller (type byte, length, body), waiting at most
 * timeout_ns for the lock; without may_allocate, only into the queue's memory as it is.
 * Returns 0 or a negative errno. */
int at__meta_append_raw(const uint8_t *record, size_t len, uint64_t timeout_ns, int may_allocate);
void at__meta_lock(void);
void at__meta_unlock(void);
/* In a forked child: the parent's pending records are the parent's to write; the names
 * registered so far are queued again for the child's trace. */
void at__meta_after_fork(void);
extern uint64_t at__names_lost; /* names that could not be kept; atomic */

/* ---- patch.c: entry patching ---- */

/* Patches the objects loaded since the last call (patch_dlopen.c, after dlopen). */
void at__patch_new_objects(void);
/* 1 when the function whose wrapper forwards through *real was patched, in an object that
 * defines symbol (in .symtab, else .dynsym): a shim's check of a runtime linked into a program,
 * whose functions dlsym cannot find. */
int at__patch_defines(void **real, const char *symbol);

/* ---- takeback.c: taking back the blocks of idle threads ---- */

/* The slow path, with the thread's first block: the thread joins the registry. 0, -ENOMEM or,
 * when the registry must grow and may_allocate is 0 (a signal handler: the program threads
 * take the registry's lock only with signals blocked), -EAGAIN; then the thread records on,
 * and its block is never taken back. */
int at__takeback_register(struct at_thread *self, int may_allocate);
/* Thread exit, before its blocks are handed over: the writer no longer looks at the thread. */
void at__takeback_remove(struct at_thread *self);
/* The slow path, its room on `block` open: makes the block the thread's current one in the
 * writer's eyes (its ticket in `held`). */
void at__takeback_publish(struct at_thread *self, struct at_ring_block *block);
/* The slow path, handing its current block over: 1 when the block is still the thread's,
 * 0 when the writer took it back. */
int at__takeback_claim(struct at_thread *self);
/* A thread found no free block: asks the writer to take back idle threads' blocks. Returns
 * whether waiting for a block may help: membarrier is not refused, the process has had live
 * threads at least half as many as the pool's most blocks (else the pool grows, or the writer
 * is behind), and no pass since the thread's first ask (*barren, set by that ask from
 * AT_TAKEBACK_FIRST) found nothing to take back. */
#define AT_TAKEBACK_FIRST UINT32_MAX
int at__takeback_ask(uint32_t *barren);
/* The writer, once per pass: takes back and writes idle threads' blocks when a thread asked.
 * Returns the blocks freed (nothing, and no lock or system call, when nobody asked). */
uint32_t at__takeback_pass(void);
/* The end of the trace, once tracing is off (no thread counts or notes drops any more): the
 * drops registered threads have not noted yet, as LOST records. Waits 100 ms at most for the
 * registry and allocates nothing (the end may come in a fatal signal's handler). */
void at__takeback_note_drops(void);
void at__takeback_after_fork(void);
/* The committed slots at the start of a block whose owner took `taken` slots and is in no
 * at_record call: they are all before the first slot never written. */
uint32_t at__block_committed(struct at_ring_block *block, uint32_t taken);

/* ---- record.c: the slow path and per-thread lifecycle ---- */

void at__thread_exit(void *unused);
void at__record_after_fork(void);
/* Overwrite mode's losses are kept per thread, for this many threads at a time. */
#define AT_OVERWRITTEN_THREADS 64
/* Turns overwrite mode's pending losses into LOST records. */
void at__overwritten_flush(void);
/* At the end: moves up to `max` pending losses into out and returns how many, waiting at most
 * timeout_ns for the lock (0 when it stays held). */
unsigned at__overwritten_take(struct at_lost *out, unsigned max, uint64_t timeout_ns);
extern uint64_t at__threads_total; /* atomic, relaxed */

#endif
