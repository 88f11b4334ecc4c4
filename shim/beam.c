/* Shim for the BEAM, the Erlang/OTP emulator (beam.smp of erts 13.1.5, OTP 25.2.3): Erlang and
 * Elixir processes. docs/shims/beam.md is the user's side.
 *
 * beam.smp is one executable whose calls to its own functions are direct; it exports them in
 * .dynsym, so every wrapper here is reached by entry patching (docs/PATCHING.md). The JIT calls
 * the same C functions by address, which the patched entry serves too.
 *
 * Wrapped, and what each records (actors are pids: the Eterm of the process's id):
 *   erts_schedule            a scheduler hands in the process that ran and gets the next:
 *                            step_end of the run before at entry, step_begin of the next at
 *                            return; the process in its run is this thread's current actor
 *   erl_create_process       spawn: the child, and the process running on this scheduler
 *   erts_do_exit_process     exit, named by the reason when it is an atom
 *   erts_queue_proc_message, erts_queue_proc_messages, erts_queue_message,
 *   erts_queue_message_token send: receiver, sender, the message's ErtsMessage as id, and its name
 *   erts_proc_sig_send_to_alias, erts_try_alloc_message_on_heap
 *                            send to an alias (a gen_server's reply), recorded when the message
 *                            for the receiver is allocated, before it is queued
 *   beam_jit_remove_message  recv: the message a receive takes out of the queue
 *   erts_schedule_process    schedule: a process made runnable, by the process running here
 *   ethr_event_twait         park / unpark of a scheduler thread going to sleep and woken
 *   erts_register_name       names the process by its registered name
 *
 * Message ids: the address of the message's ErtsMessage, which stays the same from the queue
 * function to the receive that removes it. An address the allocator hands out again is a new
 * send with the same id, which the decoder takes as a new message (decoder/match.c).
 *
 * Message names: an atom message, or the first element of a tuple when it is an atom; the id
 * is the atom's index + 1, named from the atom table the first time it is seen.
 *
 * Guard: the emulator's version string (etp_erts_version) must be 13.1.5, and atoms 0 and 1 of
 * its table must read "false" and "true" (the table's layout); else one line on stderr and
 * every call is forwarded untouched. */
/* The wrappers run behind patched entries, which save no vector register: general registers
 * only, before any header's inline functions; what they call in the C library or the emulator
 * outside the function they wrap keeps the caller's vector state (include/at_vectors.h). */
#pragma GCC target("general-regs-only")
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "actortrace.h"
#include "at_vectors.h"
#include "support.h"

/* ===== erts 13.1.5's structures (x86-64), from OTP 25.2.3 ================================= */

typedef uint64_t Eterm;
typedef struct process Process;
typedef struct erts_message ErtsMessage;

#define ERTS_VERSION "13.1.5"

#define PROC_ID       0x000 /* Eterm common.id, the pid */
#define PROC_SIG_SAVE 0x158 /* ErtsMessage **sig_qs.save: the message a receive looks at */
#define MSG_NEXT      0x00  /* ErtsMessage *next */
#define MSG_TERM      0x10  /* Eterm m[0], the message */
#define MSG_FROM      0x20  /* Eterm m[2], its sender */
#define SCHED_TYPE                                                                                 \
    0xb0                    /* ErtsSchedType type in ErtsSchedulerData: 0 normal, 1 dirty CPU,     \
                             * 2 dirty I/O */
#define SCHED_NO       0xb8 /* Uint no: a normal scheduler's number, from 1 */
#define SCHED_DIRTY_NO 0xc0 /* Uint dirty_no: a dirty scheduler's number, from 1 */

#define ATOM_TABLE_SEGS 0x78       /* Atom ***seg_table of erts_atom_table (an IndexTable) */
#define ATOM_SEG_BITS   10         /* 1024 atoms a segment */
#define ATOM_LEN        0x18       /* Sint16 len, in bytes */
#define ATOM_NAME       0x20       /* byte *name, UTF-8, not terminated */
#define ATOM_MAX        (1u << 20) /* the emulator's default limit (+t) */

/* Eterm tags. */
#define INVALID_PID        0xfffffff3 /* all 28 number bits set: the parent given for init */
#define is_pid(t)          (((t)&0xf) == 0x3)
#define is_atom(t)         (((t)&0x3f) == 0x0b)
#define is_boxed(t)        (((t)&0x3) == 0x2)
#define atom_index(t)      ((uint32_t)((t) >> 6))
#define is_arity_header(h) (((h)&0x3f) == 0 && (h) >> 6 != 0) /* a tuple of 1 or more */

static inline uint64_t word(const void *base, size_t offset)
{
    return *(const uint64_t *)((const char *)base + offset);
}

static inline Eterm pid_of(const Process *p)
{
    return word(p, PROC_ID);
}

/* ===== The functions ====================================================================== */

/* The emulator's functions, as erts 13.1.5 defines them (it installs no header for them): the
 * wrappers below are their definitions, and real_* are typed from them. */
AT_EXPORT Process *erts_schedule(void *esdp, Process *p, int calls);
AT_EXPORT Eterm erl_create_process(Process *parent, Eterm mod, Eterm func, Eterm args, void *so);
AT_EXPORT void erts_do_exit_process(Process *p, Eterm reason);
AT_EXPORT void erts_queue_proc_message(Process *sender, Process *receiver, uint32_t locks,
                                       ErtsMessage *mp, Eterm msg);
AT_EXPORT void erts_queue_proc_messages(Process *sender, Process *receiver, uint32_t locks,
                                        ErtsMessage *first, ErtsMessage **last, uint64_t len);
AT_EXPORT void erts_queue_message(Process *receiver, uint32_t locks, ErtsMessage *mp, Eterm msg,
                                  Eterm from);
AT_EXPORT void erts_queue_message_token(Process *receiver, uint32_t locks, ErtsMessage *mp,
                                        Eterm msg, Eterm from, Eterm token);
AT_EXPORT int64_t _Z23beam_jit_remove_messageP7processlPmS1_j(Process *c_p, int64_t fcalls,
                                                              Eterm *htop, Eterm *stop,
                                                              uint32_t code_ix);
AT_EXPORT void erts_proc_sig_send_to_alias(Process *c_p, Eterm from, Eterm to, Eterm msg,
                                           Eterm token);
AT_EXPORT ErtsMessage *erts_try_alloc_message_on_heap(Process *pp, void *psp, void *plp,
                                                      uint64_t sz, void *hpp, void *ohpp,
                                                      int *on_heap_p);
AT_EXPORT void erts_schedule_process(Process *p, int32_t process_state, uint32_t locks);
AT_EXPORT int ethr_event_twait(void *event, int64_t timeout);
AT_EXPORT int erts_register_name(Process *c_p, Eterm name, Eterm id);

AT_REAL(erts_schedule);
AT_REAL(erl_create_process);
AT_REAL(erts_do_exit_process);
AT_REAL(erts_queue_proc_message);
AT_REAL(erts_queue_proc_messages);
AT_REAL(erts_queue_message);
AT_REAL(erts_queue_message_token);
AT_REAL(_Z23beam_jit_remove_messageP7processlPmS1_j);
AT_REAL(erts_proc_sig_send_to_alias);
AT_REAL(erts_try_alloc_message_on_heap);
AT_REAL(erts_schedule_process);
AT_REAL(ethr_event_twait);
AT_REAL(erts_register_name);

/* beam.smp calls all of these directly: only their patched entries reach the wrappers. */
AT_PATCH_TABLE(AT_PATCHABLE(erts_schedule, AT_RETURN_RAX),
               AT_PATCHABLE(erl_create_process, AT_RETURN_RAX),
               AT_PATCHABLE(erts_do_exit_process, AT_RETURNS_NOTHING),
               AT_PATCHABLE(erts_queue_proc_message, AT_RETURNS_NOTHING),
               AT_PATCHABLE(erts_queue_proc_messages, AT_RETURNS_NOTHING),
               AT_PATCHABLE(erts_queue_message, AT_RETURNS_NOTHING),
               AT_PATCHABLE(erts_queue_message_token, AT_RETURNS_NOTHING),
               AT_PATCHABLE(_Z23beam_jit_remove_messageP7processlPmS1_j, AT_RETURN_RAX),
               AT_PATCHABLE(erts_proc_sig_send_to_alias, AT_RETURNS_NOTHING),
               AT_PATCHABLE(erts_try_alloc_message_on_heap, AT_RETURN_RAX),
               AT_PATCHABLE(erts_schedule_process, AT_RETURNS_NOTHING),
               AT_PATCHABLE(ethr_event_twait, AT_RETURN_RAX),
               AT_PATCHABLE(erts_register_name, AT_RETURN_RAX));

/* ===== Guard ============================================================================== */

static const char *atom_table; /* erts_atom_table */

/* The text of atom `index` and its length, from the atom table. */
static const char *atom_text(uint32_t index, size_t *len)
{
    const char *const *const *segs = (const void *)word(atom_table, ATOM_TABLE_SEGS);
    const char *atom = segs[index >> ATOM_SEG_BITS][index & ((1u << ATOM_SEG_BITS) - 1)];
    *len = (size_t) * (const int16_t *)(atom + ATOM_LEN);
    return (const char *)word(atom, ATOM_NAME);
}

/* 1 when atom `index` of the first segment reads `text`; every pointer on the way is checked,
 * since the table may not be laid out as expected. */
static int atom_is(uint32_t index, const char *text)
{
    const char *const *const *segs = (const void *)word(atom_table, ATOM_TABLE_SEGS);
    const char *atom = segs && segs[0] ? segs[0][index] : NULL;
    if (!atom || !word(atom, ATOM_NAME))
        return 0;
    size_t len;
    const char *s = atom_text(index, &len);
    return len == strlen(text) && memcmp(s, text, len) == 0;
}

/* The version guard: 0 when this emulator's layout is the one known; else -1, with why[]
 * saying why not. */
static int mismatch(char *why, size_t size)
{
    const char *version = dlsym(RTLD_DEFAULT, "etp_erts_version");
    if (!version)
        snprintf(why, size, "etp_erts_version is missing, this is not the BEAM");
    else if (strcmp(version, ERTS_VERSION) != 0)
        snprintf(why, size, "erts %.32s, not " ERTS_VERSION, version);
    else if (!(atom_table = dlsym(RTLD_DEFAULT, "erts_atom_table")) || !atom_is(0, "false") ||
             !atom_is(1, "true"))
        snprintf(why, size, "its atom table is not laid out as erts " ERTS_VERSION "'s");
    else
        return 0;
    return -1;
}

static struct at_shim shim = {
    .reals = AT_SHIM_REALS(
        AT_SHIM_REAL(erts_schedule), AT_SHIM_REAL(erl_create_process),
        AT_SHIM_REAL(erts_do_exit_process), AT_SHIM_REAL(erts_queue_proc_message),
        AT_SHIM_REAL(erts_queue_proc_messages), AT_SHIM_REAL(erts_queue_message),
        AT_SHIM_REAL(erts_queue_message_token),
        AT_SHIM_REAL(_Z23beam_jit_remove_messageP7processlPmS1_j),
        AT_SHIM_REAL(erts_proc_sig_send_to_alias), AT_SHIM_REAL(erts_try_alloc_message_on_heap),
        AT_SHIM_REAL(erts_schedule_process), AT_SHIM_REAL(ethr_event_twait),
        AT_SHIM_REAL(erts_register_name)),
    .runtime = "beam",
    .check = mismatch,
};

static inline int on(void)
{
    return at_shim_on(&shim);
}

/* ===== Names ============================================================================== */

static uint64_t atoms_named[ATOM_MAX / 64]; /* a bit per atom index; atomic */

/* Copies the text of atom `index` into text[size], terminated, cut if longer. */
static void atom_copy(uint32_t index, char *text, size_t size)
{
    size_t len;
    const char *s = atom_text(index, &len);
    AT_VECTORS_KEPT(snprintf(text, size, "%.*s", (int)len, s));
}

/* The message-name id of atom `t`: its index + 1; names it the first time. */
static uint32_t atom_id(Eterm t)
{
    uint32_t index = atom_index(t);
    if (index >= ATOM_MAX)
        return 0;
    uint64_t bit = 1ull << (index % 64);
    /* relaxed: the bit says only that some thread names it; naming twice is harmless */
    if (AT_UNLIKELY(!(__atomic_load_n(&atoms_named[index / 64], __ATOMIC_RELAXED) & bit)) &&
        !(__atomic_fetch_or(&atoms_named[index / 64], bit, __ATOMIC_RELAXED) & bit)) {
        char text[256];
        atom_copy(index, text, sizeof text);
        at_name_msg(index + 1, text);
    }
    return index + 1;
}

/* The name of message `msg`: the atom, or the first element of a tuple when it is an atom. */
static uint32_t msg_name(Eterm msg)
{
    if (is_boxed(msg)) {
        const Eterm *tuple = (const Eterm *)(msg - 2);
        if (!is_arity_header(tuple[0]))
            return 0;
        msg = tuple[1];
    }
    return is_atom(msg) ? atom_id(msg) : 0;
}

AT_EXPORT int erts_register_name(Process *c_p, Eterm name, Eterm id)
{
    AT_SHIM_RESOLVE(&shim, real_erts_register_name);
    int done = real_erts_register_name(c_p, name, id);
    if (done && is_pid(id) && is_atom(name) && on() && at_enabled()) {
        char text[256];
        atom_copy(atom_index(name), text, sizeof text);
        at_name_actor(id, text);
    }
    return done;
}

/* ===== Runs of processes on schedulers ====================================================
 * The process in its run is the thread's current actor (0 between runs); a scheduler thread is
 * one that called erts_schedule, and its actor id in park and unpark is SCHEDULER_BASE + its
 * type << 32 + its number. */

#define SCHEDULER_BASE (1ull << 62) /* no pid has bit 62 set: a pid's data is 28 + 32 bits */

static void *(*real_erts_get_scheduler_data)(void); /* not wrapped: called only */
static __thread uint64_t thread_scheduler;

/* The actor id of the scheduler whose data is esdp (the JIT's calls to erts_schedule pass NULL:
 * the calling thread's), named for its type and number: scheduler-1, dirty-cpu-1, dirty-io-1. */
static uint64_t scheduler_id(void *esdp)
{
    static const char *const types[] = {"scheduler", "dirty-cpu", "dirty-io"};
    if (!esdp) { /* the executable's own export: dlsym(RTLD_NEXT) from here does not see it */
        if (!real_erts_get_scheduler_data)
            AT_VECTORS_KEPT(*(void **)&real_erts_get_scheduler_data =
                                dlsym(RTLD_DEFAULT, "erts_get_scheduler_data"));
        if (real_erts_get_scheduler_data)
            AT_VECTORS_KEPT(esdp = real_erts_get_scheduler_data());
    }
    uint32_t type = esdp ? *(const uint32_t *)((const char *)esdp + SCHED_TYPE) : 3;
    if (type > 2)
        return SCHEDULER_BASE;
    uint64_t no = word(esdp, type == 0 ? SCHED_NO : SCHED_DIRTY_NO);
    uint64_t id = SCHEDULER_BASE + ((uint64_t)type << 32) + no;
    char name[32];
    AT_VECTORS_KEPT(snprintf(name, sizeof name, "%s-%llu", types[type], (unsigned long long)no));
    at_name_actor(id, name);
    return id;
}

AT_EXPORT Process *erts_schedule(void *esdp, Process *p, int calls)
{
    AT_SHIM_RESOLVE(&shim, real_erts_schedule);
    if (!on())
        return real_erts_schedule(esdp, p, calls);
    uint64_t ran = at_set_current_actor(0);
    if (ran)
        at_record(AT_EV_STEP_END, ran, 0, 0, 0, 0);
    if (AT_UNLIKELY(!thread_scheduler))
        thread_scheduler = scheduler_id(esdp);
    Process *next = real_erts_schedule(esdp, p, calls);
    if (next) {
        at_set_current_actor(pid_of(next));
        at_record(AT_EV_STEP_BEGIN, pid_of(next), 0, 0, 0, 0);
    }
    return next;
}

AT_EXPORT int ethr_event_twait(void *event, int64_t timeout)
{
    AT_SHIM_RESOLVE(&shim, real_ethr_event_twait);
    uint64_t scheduler = thread_scheduler;
    if (!scheduler || !on())
        return real_ethr_event_twait(event, timeout);
    at_record(AT_EV_PARK, scheduler, 0, 0, 0, 0);
    int woken = real_ethr_event_twait(event, timeout);
    at_record(AT_EV_UNPARK, scheduler, 0, 0, 0, 0);
    return woken;
}

/* The timestamp of the send whose queueing runs on this thread (the queue functions below):
 * the schedule that queueing makes shares it (at_timestamp_after). */
static __thread struct at_stamp send_stamp;

AT_EXPORT void erts_schedule_process(Process *p, int32_t process_state, uint32_t locks)
{
    AT_SHIM_RESOLVE(&shim, real_erts_schedule_process);
    if (on()) {
        uint64_t stamp = at_timestamp_after(send_stamp);
        at_record_at(&stamp, AT_EV_SCHEDULE, pid_of(p), at_current_actor(), 0, 0, 0);
    }
    real_erts_schedule_process(p, process_state, locks);
}

/* ===== Spawn and exit ===================================================================== */

AT_EXPORT Eterm erl_create_process(Process *parent, Eterm mod, Eterm func, Eterm args, void *so)
{
    AT_SHIM_RESOLVE(&shim, real_erl_create_process);
    Eterm child = real_erl_create_process(parent, mod, func, args, so);
    if (is_pid(child) && on()) {
        uint64_t spawner = at_current_actor();
        if (!spawner && parent && pid_of(parent) != INVALID_PID)
            spawner = pid_of(parent);
        at_record(AT_EV_SPAWN, child, spawner, 0, 0, 0);
    }
    return child;
}

AT_EXPORT void erts_do_exit_process(Process *p, Eterm reason)
{
    AT_SHIM_RESOLVE(&shim, real_erts_do_exit_process);
    if (on())
        at_record(AT_EV_EXIT, pid_of(p), 0, 0, is_atom(reason) ? atom_id(reason) : 0, 0);
    real_erts_do_exit_process(p, reason);
}

/* ===== Sends and receives ================================================================= */

/* Records the send; returns the stamp send_stamp held, to put back after the queueing. */
static inline struct at_stamp record_send(const Process *receiver, Eterm from,
                                          const ErtsMessage *mp, Eterm msg)
{
    uint64_t now = at_timestamp();
    at_record_at(&now, AT_EV_SEND, pid_of(receiver), is_pid(from) ? from : 0, (uint64_t)mp,
                 msg_name(msg), 0);
    struct at_stamp outer = send_stamp;
    send_stamp = at_stamp_of(now);
    return outer;
}

AT_EXPORT void erts_queue_proc_message(Process *sender, Process *receiver, uint32_t locks,
                                       ErtsMessage *mp, Eterm msg)
{
    AT_SHIM_RESOLVE(&shim, real_erts_queue_proc_message);
    if (!on()) {
        real_erts_queue_proc_message(sender, receiver, locks, mp, msg);
        return;
    }
    struct at_stamp outer = record_send(receiver, pid_of(sender), mp, msg);
    real_erts_queue_proc_message(sender, receiver, locks, mp, msg);
    send_stamp = outer;
}

AT_EXPORT void erts_queue_proc_messages(Process *sender, Process *receiver, uint32_t locks,
                                        ErtsMessage *first, ErtsMessage **last, uint64_t len)
{
    AT_SHIM_RESOLVE(&shim, real_erts_queue_proc_messages);
    const ErtsMessage *mp = first;
    struct at_stamp outer = send_stamp;
    for (uint64_t i = 0; mp && i < len && on(); i++, mp = (const void *)word(mp, MSG_NEXT))
        record_send(receiver, pid_of(sender), mp, word(mp, MSG_TERM));
    real_erts_queue_proc_messages(sender, receiver, locks, first, last, len);
    send_stamp = outer;
}

AT_EXPORT void erts_queue_message(Process *receiver, uint32_t locks, ErtsMessage *mp, Eterm msg,
                                  Eterm from)
{
    AT_SHIM_RESOLVE(&shim, real_erts_queue_message);
    if (!on()) {
        real_erts_queue_message(receiver, locks, mp, msg, from);
        return;
    }
    struct at_stamp outer = record_send(receiver, from, mp, msg);
    real_erts_queue_message(receiver, locks, mp, msg, from);
    send_stamp = outer;
}

AT_EXPORT void erts_queue_message_token(Process *receiver, uint32_t locks, ErtsMessage *mp,
                                        Eterm msg, Eterm from, Eterm token)
{
    AT_SHIM_RESOLVE(&shim, real_erts_queue_message_token);
    if (!on()) {
        real_erts_queue_message_token(receiver, locks, mp, msg, from, token);
        return;
    }
    struct at_stamp outer = record_send(receiver, from, mp, msg);
    real_erts_queue_message_token(receiver, locks, mp, msg, from, token);
    send_stamp = outer;
}

/* A send to an alias queues its message as a signal by calls not exported: the message is
 * recorded when erts_try_alloc_message_on_heap allocates it for the receiver, inside the send.
 * A receiver whose message queue is off the heap gets its message allocated otherwise: that
 * send is not recorded. */
static __thread struct {
    Eterm from, msg;
    int active;
} alias_send;

AT_EXPORT void erts_proc_sig_send_to_alias(Process *c_p, Eterm from, Eterm to, Eterm msg,
                                           Eterm token)
{
    AT_SHIM_RESOLVE(&shim, real_erts_proc_sig_send_to_alias);
    alias_send.from = from;
    alias_send.msg = msg;
    alias_send.active = 1;
    real_erts_proc_sig_send_to_alias(c_p, from, to, msg, token);
    alias_send.active = 0;
}

AT_EXPORT ErtsMessage *erts_try_alloc_message_on_heap(Process *pp, void *psp, void *plp,
                                                      uint64_t sz, void *hpp, void *ohpp,
                                                      int *on_heap_p)
{
    AT_SHIM_RESOLVE(&shim, real_erts_try_alloc_message_on_heap);
    ErtsMessage *mp = real_erts_try_alloc_message_on_heap(pp, psp, plp, sz, hpp, ohpp, on_heap_p);
    if (alias_send.active && mp && on()) {
        alias_send.active = 0;
        /* the schedule, made by the queueing after this returns, takes its own timestamp */
        send_stamp = record_send(pp, alias_send.from, mp, alias_send.msg);
    }
    return mp;
}

/* beam_jit_remove_message(Process *, Sint fcalls, Eterm *htop, Eterm *stop, Uint32 code_ix):
 * the receive takes the message its save pointer is at. */
AT_EXPORT int64_t _Z23beam_jit_remove_messageP7processlPmS1_j(Process *c_p, int64_t fcalls,
                                                              Eterm *htop, Eterm *stop,
                                                              uint32_t code_ix)
{
    AT_SHIM_RESOLVE(&shim, real__Z23beam_jit_remove_messageP7processlPmS1_j);
    if (on()) {
        const ErtsMessage *mp = *(ErtsMessage *const *)word(c_p, PROC_SIG_SAVE);
        Eterm from = word(mp, MSG_FROM);
        at_record(AT_EV_RECV, pid_of(c_p), is_pid(from) ? from : 0, (uint64_t)mp,
                  msg_name(word(mp, MSG_TERM)), 0);
    }
    return real__Z23beam_jit_remove_messageP7processlPmS1_j(c_p, fcalls, htop, stop, code_ix);
}
