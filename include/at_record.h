/* The recording hot path: one event into the calling thread's current block. Everything here
 * is inlined into the shims' wrappers; whatever is rare (no block yet, block full, tracing off,
 * before the library's constructor) goes to at__record_slow(), whose entry in
 * preload/lifecycle.c starts the recorder if need be and hands the event to preload/record.c.
 *
 * Cost model (README, "Overhead"): rdtsc is most of it; the rest is one unlocked xadd, a core
 * read from the rseq area, five stores and a counter up and down. No lock, no atomic
 * read-modify-write, no syscall, no allocation, no string work.
 *
 * The invariants, for this file and record.c (the only place a thread's block changes):
 *  - A slot belongs to the call that took it with the xadd on `next`: one instruction, so a
 *    signal handler recording on the same thread lands before or after it and takes another.
 *  - `nest` counts the at_record calls in progress on the thread (a signal handler's inside the
 *    call it interrupted). The current block changes only in the outermost call (nest == 1),
 *    with signals blocked, so a call that took a slot writes it into the block it took it from.
 *  - A nested call that finds the block full records into the thread's spare block instead
 *    (its own xadd on spare_next, in the thread's private state, preload/util.h); the
 *    outermost call's next switch makes the spare current, so the thread's events stay in
 *    order. A full spare is handed over (blocks are ordered by their number) when no call holds
 *    a slot of it (spare_busy), by a call that finds it still the spare it saw full once
 *    signals are blocked (a handler may have replaced it). No spare to be had: the event is
 *    dropped and counted.
 *  - A slot is committed when the word holding `kind` is stored, last, with release; the
 *    writer (and a post-mortem reader of the ring file) uses only committed slots.
 *  - A block is handed over only by the outermost call, when no call of the thread is between
 *    its xadd and its commit: every slot taken in it is committed.
 *  - After a switch, the outermost call records its event again through at_record, at nest 2
 *    (its own count is still up): if a signal handler filled the new block meanwhile, the
 *    retry goes to the spare as a nested call would. That is safe, only more careful than
 *    needed: the outermost call holds no slot once its old block is handed over.
 *  - `next` and `capacity` are set together, with one 8-byte store, by the thread; the writer
 *    only ever stores 0 into `capacity` alone (4 bytes), to take the block back.
 *  - Taking back (preload/takeback.c): the writer stores capacity = 0, runs one membarrier
 *    (a full barrier on every thread of the process), then reads `nest`: 0 means no call of
 *    the thread is between its load of capacity and its commit, and every later call sees 0
 *    and goes to the slow path. The block then belongs to whoever clears `held` first (the
 *    writer's compare-exchange, the slow path's exchange when it hands the block over); the
 *    thread sets `held` only after opening the room, and clears it before closing the room;
 *    the writer reads `next` (the block's slots) before its compare-exchange, never after,
 *    when `next` may count the thread's next block. This adds no instruction here. */
#ifndef AT_RECORD_H
#define AT_RECORD_H

/* Supported platforms (README, "Platforms"): the hot path reads the TSC and the rseq area that
 * glibc registers for every thread since 2.35. */
#if !defined(__x86_64__) || !defined(__linux__)
#error "actortrace supports x86-64 Linux only"
#endif
#include <features.h>
#if !defined(__GLIBC__) || !__GLIBC_PREREQ(2, 35)
#error "actortrace needs glibc 2.35 or later (rseq)"
#endif

#include <stdint.h>
#include <sys/rseq.h>

#include "at_format.h"

/* What the library exports (it is built with -fvisibility=hidden): this header's and
 * actortrace.h's API, and each function a shim defines under a runtime's name. */
#define AT_EXPORT __attribute__((visibility("default")))

#define AT_LIKELY(x)   __builtin_expect(!!(x), 1)
#define AT_UNLIKELY(x) __builtin_expect(!!(x), 0)

struct at_frame; /* actortrace.h: what a jump out of a handler or a step must undo */

/* Per-thread recorder state: what the inline code of this header and actortrace.h reads and
 * writes, which a separately built shim compiles in; everything else the recorder keeps per
 * thread is private to it (preload/util.h, struct at_thread_state). Owner: the thread itself.
 * The writer reads `next` and `nest` and stores 0 in `capacity` when it takes the block back
 * (preload/takeback.c); other threads read a block's slots only through the ring (acquire on
 * the slot's last word). */
struct at_thread {
    struct at_event *slots;  /* the current block's slots; NULL before the first block */
    uint32_t next;           /* next slot to take; taken with an unlocked xadd (signal-safe) */
    uint32_t capacity;       /* slots in the current block; 0 sends every event to the slow path.
                              * next and capacity share one 8-byte word (set together) */
    uint32_t nest;           /* at_record calls in progress on this thread (signal handlers) */
    uint32_t depth;          /* shim nesting depth: only the outermost call is recorded */
    uint64_t current_actor;  /* actor whose handler runs on this thread; 0 = none */
    struct at_frame *frames; /* the innermost signal handler or step a jump may leave, or NULL
                              * (preload/jumps.c); the thread and its handlers only */
    uintptr_t depth_sp;      /* the stack pointer of the outermost shim wrapper (at_enter), which
                              * a jump past it leaves: jumps.c then lowers depth */
};

/* initial-exec: the library is loaded at startup by LD_PRELOAD, so its TLS sits in the static
 * block and each access is one %fs-relative load; the default model calls __tls_get_addr
 * (2-3 ns per event). */
AT_EXPORT extern __thread struct at_thread at__self __attribute__((tls_model("initial-exec")));

AT_EXPORT void at__record_slow(unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg,
                               uint32_t name, unsigned path);

/* Call stacks (preload/stacks.c): bit k asks for a stack on events of kind k < 64
 * (ACTORTRACE_STACKS). at__stack_capture records the stack's id as an event of the registered
 * kind "stack" just before the event itself. */
AT_EXPORT extern uint64_t at__stack_kinds;
AT_EXPORT void at__stack_capture(unsigned kind, uint64_t actor);

static inline uint64_t at__rdtsc(void)
{
    uint32_t lo, hi;
    /* Plain rdtsc, not rdtscp or lfence;rdtsc: those double the cost, and events of one thread
     * are ordered by their slot, not by their timestamp. */
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

AT_EXPORT int at__core_slow(void);

static inline uintptr_t at__stack_pointer(void)
{
    uintptr_t sp;
    __asm__("mov %%rsp, %0" : "=r"(sp));
    return sp;
}

/* The CPU number from the rseq area glibc registers for every thread (about 1 ns); the kernel
 * keeps cpu_id current. A negative value means rseq is not registered here. */
static inline unsigned at__core(void)
{
    char *tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    int32_t cpu = *(volatile int32_t *)(tp + __rseq_offset + 4);
    if (AT_UNLIKELY(cpu < 0))
        return (unsigned)at__core_slow();
    return (unsigned)cpu;
}

/* Writes one event, stamped `tsc`, into the slot `ev` its caller took, and commits it. */
static inline void at__fill_at(struct at_event *ev, uint64_t tsc, unsigned kind, uint64_t actor,
                               uint64_t peer, uint64_t msg, uint32_t name, unsigned path)
{
    ev->tsc = tsc;
    ev->actor = actor;
    ev->peer = peer;
    ev->msg = msg;
    uint64_t tail = (uint64_t)name | (uint64_t)at__core() << 32 | (uint64_t)(path & 0xff) << 48 |
                    (uint64_t)(kind & 0xff) << 56;
    /* Commit: the word holding `kind` is stored last, with release (pairs with the writer's
     * acquire load of kind), so no reader sees kind != 0 with older fields. */
    __atomic_store_n((uint64_t *)&ev->name, tail, __ATOMIC_RELEASE);
}

/* Writes one event into the slot `ev` its caller took, stamped now, and commits it. */
static inline void at__fill(struct at_event *ev, unsigned kind, uint64_t actor, uint64_t peer,
                            uint64_t msg, uint32_t name, unsigned path)
{
    at__fill_at(ev, at__rdtsc(), kind, actor, peer, msg, name, path);
}

/* The clock events are stamped with: the TSC, but for the floor variant without its clock
 * (AT_BENCH_NO_CLOCK; make bench builds it), whose every event is the floor's 16-byte store
 * alone, stamped 0: beside the floor variant it tells what the wrappers cost without the rdtsc
 * and what the rdtsc adds (tests/bench/beam.sh). */
static inline uint64_t at__clock(void)
{
#if defined(AT_BENCH_FLOOR) && defined(AT_BENCH_NO_CLOCK)
    return 0;
#else
    return at__rdtsc();
#endif
}

/* The timestamp of an event: what at_record_at takes, for the events that one wrapper call
 * records together (a recv and the step it starts), read once for all of them. */
static inline uint64_t at_timestamp(void)
{
    return at__clock();
}

#ifdef AT_BENCH_FLOOR
/* The benchmarks' floor variant (make bench builds it; the product never is): every event is
 * one rdtsc and one 16-byte store into a per-thread ring that nothing reads, as
 * `hotpath --floor` times it, and no recorder starts (no block, no writer, no trace). Traced
 * with it, a program pays the shims' own work plus the floor per event: the bound of any
 * rdtsc-per-event tracer with these wrappers (tests/bench/programs.sh). */
struct at_floor_slot {
    uint64_t tsc, value;
};
#define AT_FLOOR_SLOTS 4096
AT_EXPORT extern __thread struct at_floor_slot at__floor_ring[AT_FLOOR_SLOTS]
    __attribute__((tls_model("initial-exec")));
AT_EXPORT extern __thread uint32_t at__floor_next __attribute__((tls_model("initial-exec")));

static inline void at_record(unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg,
                             uint32_t name, unsigned path)
{
    struct at_floor_slot *slot = &at__floor_ring[at__floor_next++ & (AT_FLOOR_SLOTS - 1)];
    slot->tsc = at__clock();
    /* every argument folded in, so that what the shim computes for them stays in the build */
    slot->value = actor ^ peer ^ msg ^ ((uint64_t)name << 32 | kind << 8 | (path & 0xff));
}

/* As the product's at_event_mark below: here, the count of the thread's events. */
static inline uint64_t at_event_mark(void)
{
    return at__floor_next;
}

static inline void at_record_at(uint64_t *tsc, unsigned kind, uint64_t actor, uint64_t peer,
                                uint64_t msg, uint32_t name, unsigned path)
{
    struct at_floor_slot *slot = &at__floor_ring[at__floor_next++ & (AT_FLOOR_SLOTS - 1)];
    slot->tsc = *tsc;
    slot->value = actor ^ peer ^ msg ^ ((uint64_t)name << 32 | kind << 8 | (path & 0xff));
}
#else
/* at_record (tsc NULL: the timestamp is read after the slot is taken) and at_record_at (*tsc
 * given): `tsc` is a constant or not in each, so each inlines to its own path. */
static inline void at__record(uint64_t *tsc, unsigned kind, uint64_t actor, uint64_t peer,
                              uint64_t msg, uint32_t name, unsigned path)
{
    /* A kind not asked for costs this test of one bit (a constant in every shim). */
    if (AT_UNLIKELY(kind < 64 && (at__stack_kinds >> kind & 1)))
        at__stack_capture(kind, actor);
    struct at_thread *self = &at__self;
    uint32_t slot = 1;
    /* nest is up before the slot is taken and down after the commit ("memory": in that order
     * for a signal handler on this thread; the writer reads it too, after a membarrier, when
     * it takes the block back: see the invariants) */
    __asm__ volatile("incl %0" : "+m"(self->nest)::"memory");
    /* one instruction without a lock prefix: see the invariants above */
    __asm__ volatile("xaddl %0, %1" : "+r"(slot), "+m"(self->next));
    if (AT_UNLIKELY(slot >= self->capacity)) {
        at__record_slow(kind, actor, peer, msg, name, path);
        __asm__ volatile("decl %0" : "+m"(self->nest)::"memory");
        /* stamped in there, later, if it was recorded (the thread has room now): what follows
         * must not go back */
        if (tsc && self->capacity)
            *tsc = at__rdtsc();
        return;
    }
    struct at_event *ev = &self->slots[slot];
    at__fill_at(ev, tsc ? *tsc : at__rdtsc(), kind, actor, peer, msg, name, path);
    __asm__ volatile("decl %0" : "+m"(self->nest)::"memory");
}

/* Records one event. kind: enum at_event_kind or a registered kind; path: a registered path
 * id or 0. Safe from any thread, from signal handlers, and before the library is initialised
 * (the slow path initialises or drops). What cannot be recorded safely is dropped and counted:
 * in a signal handler, an event that would start the recorder or the thread's recording, and
 * a nested call's event when no spare block is to be had. Does not touch errno. */
static inline void at_record(unsigned kind, uint64_t actor, uint64_t peer, uint64_t msg,
                             uint32_t name, unsigned path)
{
    at__record(0, kind, actor, peer, msg, name, path);
}

/* The same, stamped *tsc (from at_timestamp()) rather than now: events that one wrapper call
 * records together share one rdtsc, given in the order they happen, each with the same tsc.
 * An event that takes the slow path (the thread's first, or a new block's) is stamped there,
 * a little later, and *tsc is read anew after it, so that the thread's timestamps never go
 * back. */
static inline void at_record_at(uint64_t *tsc, unsigned kind, uint64_t actor, uint64_t peer,
                                uint64_t msg, uint32_t name, unsigned path)
{
    at__record(tsc, kind, actor, peer, msg, name, path);
}

/* A value that changes with every event the calling thread records (the address of its next
 * slot): equal at two points, nothing was recorded between them, so an event may take the
 * timestamp of the one before without going back in time. */
static inline uint64_t at_event_mark(void)
{
    return (uint64_t)(uintptr_t)at__self.slots + (uint64_t)at__self.next * sizeof(struct at_event);
}
#endif /* AT_BENCH_FLOOR */

/* An event's timestamp, and the thread's mark just after it was recorded: what a later event
 * of the same exchange, in another wrapper call (a schedule made inside a send, a park after
 * a step's end), may share when the thread recorded nothing between. tsc 0 = none. */
struct at_stamp {
    uint64_t tsc, mark;
};

/* The stamp of the event the calling thread has just recorded with timestamp tsc. */
static inline struct at_stamp at_stamp_of(uint64_t tsc)
{
    return (struct at_stamp){tsc, at_event_mark()};
}

/* The timestamp for the event that follows the one stamped `last`: the same, unless the
 * thread recorded another event since (then now, so that the thread's timestamps never go
 * back). */
static inline uint64_t at_timestamp_after(struct at_stamp last)
{
    return last.tsc && last.mark == at_event_mark() ? last.tsc : at_timestamp();
}

#endif
