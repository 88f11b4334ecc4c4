/* Shim for the runtime of Aether v0.572.0 (an actor language compiled to C), when the program
 * is linked against the runtime as a shared library. docs/shims/aether.md is the user's side.
 *
 * Wrapped, and what each records:
 *   scheduler_send_local, scheduler_send_remote, scheduler_send_batch_add, aether_send_message
 *                          send, at the outermost call only (aether_send_message calls
 *                          send_local / remote itself), path "local", "remote", "batch/WAY",
 *                          "message/WAY"; WAY is local when the target is assigned to the
 *                          sending worker's core, which is how the runtime chooses
 *   scheduler_ask_message  send, path "ask/WAY"
 *   scheduler_reply        the registered kind "reply": actor the asker, peer the replier, msg
 *                          the id of the ask it answers
 *   scheduler_spawn_actor, scheduler_register_actor
 *                          spawn (peer: the spawner) and schedule (peer: the worker of the
 *                          actor's core); the actor's step pointer is replaced by
 *                          step_trampoline, which records step_begin / step_end around it;
 *                          a step left by a jump (a panic) ends with path "abandoned"
 *   scheduler_release_actor  exit
 *   scheduler_thread       marks the thread as the worker of its core: its condvar waits (the
 *                          runtime parks idle workers in pthread_cond_timedwait) are recorded by
 *                          shim/glibc.c through workers.h as park / unpark, path "worker",
 *                          the unpark naming who signalled the condvar
 *
 * Message ids: the send gives each message an id and writes it, tagged with the sign bit, into
 * the Message's sender_id, which v0.572's generated code leaves 0 (that is why its own tracer's
 * sender is always 0); the trampoline reads it back from the message at the mailbox head, the
 * one the step takes. A message whose sender_id is already set keeps it and is recorded with
 * msg 0.
 *
 * Senders: the actor whose step runs on the thread; on the main thread, outside any step, the
 * id MAIN_ACTOR ("main"); workers are WORKER_ID_BASE + core ("worker-N").
 *
 * Guard: the shim records only when every function below exists (the runtime is Aether's) and
 * the first actor spawned has its step pointer at ACTOR_STEP (the layout is v0.572's); else it
 * says so once and forwards every call untouched. */
/* The wrappers may run behind patched entries, which save no vector register: general registers
 * only, before any header's inline functions (include/at_vectors.h). */
#pragma GCC target("general-regs-only")
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "actortrace.h"
#include "at_vectors.h"
#include "support.h"
#include "workers.h"

/* ===== Aether v0.572.0's ABI (x86-64) ===================================================== */

typedef struct {
    int type;
    int sender_id;
    intptr_t payload_int;
    void *payload_ptr;
    struct {
        void *data;
        int size;
        int owned;
    } zerocopy;
    void *reply_slot;
} aether_msg;
_Static_assert(sizeof(aether_msg) == 48, "Aether's Message is 48 bytes, passed by value");

#define ACTOR_ID      4    /* int */
#define ACTOR_MAILBOX 8    /* aether_msg[MAILBOX_SLOTS], then the ring's indexes */
#define MAILBOX_HEAD  1536 /* int, from the mailbox: the slot of the oldest message */
#define MAILBOX_COUNT 1544 /* int, from the mailbox */
#define MAILBOX_SLOTS 32
#define ACTOR_STEP    1560 /* void (*)(void *) */
#define ACTOR_CORE    1580 /* int: the core whose worker runs the actor */

typedef void step_fn(void *actor);

/* The runtime's functions, as v0.572.0 defines them (it installs no header): the wrappers below
 * are their definitions, and real_* are typed from them. */
AT_EXPORT void scheduler_send_local(void *actor, aether_msg msg);
AT_EXPORT void scheduler_send_remote(void *actor, aether_msg msg, int from_core);
AT_EXPORT void scheduler_send_batch_add(void *actor, aether_msg msg);
AT_EXPORT void aether_send_message(void *actor, void *message_data, size_t message_size);
AT_EXPORT void *scheduler_ask_message(void *actor, void *msg, size_t size, int timeout_ms);
AT_EXPORT void scheduler_reply(void *actor, void *data, size_t size);
AT_EXPORT void *scheduler_spawn_actor(int preferred_core, step_fn *step, size_t actor_size);
AT_EXPORT int scheduler_register_actor(void *actor, int preferred_core);
AT_EXPORT void scheduler_release_actor(void *actor);
AT_EXPORT void *scheduler_thread(void *arg);

AT_REAL(scheduler_send_local);
AT_REAL(scheduler_send_remote);
AT_REAL(scheduler_send_batch_add);
AT_REAL(aether_send_message);
AT_REAL(scheduler_ask_message);
AT_REAL(scheduler_reply);
AT_REAL(scheduler_spawn_actor);
AT_REAL(scheduler_register_actor);
AT_REAL(scheduler_release_actor);
AT_REAL(scheduler_thread);
static void *real_scheduler_send_batch_start, *real_scheduler_send_batch_flush; /* checked only */

/* Aether's default build links the runtime into the program, where no PLT carries its calls:
 * the recorder patches these functions' entries to jump to the wrappers (docs/PATCHING.md). */
AT_PATCH_TABLE(AT_PATCHABLE(scheduler_send_local, AT_RETURNS_NOTHING),
               AT_PATCHABLE(scheduler_send_remote, AT_RETURNS_NOTHING),
               AT_PATCHABLE(scheduler_send_batch_add, AT_RETURNS_NOTHING),
               AT_PATCHABLE(aether_send_message, AT_RETURNS_NOTHING),
               AT_PATCHABLE(scheduler_ask_message, AT_RETURN_RAX),
               AT_PATCHABLE(scheduler_reply, AT_RETURNS_NOTHING),
               AT_PATCHABLE(scheduler_spawn_actor, AT_RETURN_RAX),
               AT_PATCHABLE(scheduler_register_actor, AT_RETURN_RAX),
               AT_PATCHABLE(scheduler_release_actor, AT_RETURNS_NOTHING),
               AT_PATCHABLE(scheduler_thread, AT_RETURN_RAX));

/* ===== Guard ============================================================================== */

/* Message types start at 0, which is "no name" in a trace: a message's name id is its type
 * plus one, which the trace says by registering this path name (docs/FORMAT.md), so that
 * tracedecode shows and takes types. */
#define TYPE_MARK "type+1"

static void mark_types(void)
{
    at_path_register(TYPE_MARK);
}

/* Every function must exist; the layout is checked at the first spawn (at_shim_off). */
static struct at_shim shim = {
    .reals = AT_SHIM_REALS(
        AT_SHIM_REAL(scheduler_send_local), AT_SHIM_REAL(scheduler_send_remote),
        AT_SHIM_REAL(scheduler_send_batch_add), AT_SHIM_REAL(aether_send_message),
        AT_SHIM_REAL(scheduler_ask_message), AT_SHIM_REAL(scheduler_reply),
        AT_SHIM_REAL(scheduler_spawn_actor), AT_SHIM_REAL(scheduler_register_actor),
        AT_SHIM_REAL(scheduler_release_actor), AT_SHIM_REAL(scheduler_thread),
        AT_SHIM_REAL(scheduler_send_batch_start), AT_SHIM_REAL(scheduler_send_batch_flush)),
    .runtime = "aether",
    .expected = "Aether's runtime",
    .start = mark_types,
    .all_required = 1,
};

static inline int on(void)
{
    return at_shim_on(&shim);
}

static void switch_off(const char *why)
{
    at_shim_off(&shim, why);
}

static inline uint32_t type_name(int type)
{
    return (uint32_t)type + 1; /* -1, no type: 0, no name */
}

/* ===== Paths and kinds ==================================================================== */

enum label {
    PATH_LOCAL,
    PATH_REMOTE,
    PATH_MESSAGE, /* + 1: remote */
    PATH_MESSAGE_REMOTE,
    PATH_BATCH,
    PATH_BATCH_REMOTE,
    PATH_ASK,
    PATH_ASK_REMOTE,
    PATH_WORKER,
    PATH_ABANDONED, /* a step_end: the step was left by a jump (a panic) */
    KIND_REPLY,
    LABELS
};
static const char *const label_names[LABELS] = {
    "local",     "remote",     "message/local", "message/remote", "batch/local", "batch/remote",
    "ask/local", "ask/remote", "worker",        "abandoned",      "reply"};
static unsigned label_ids[LABELS];
static const struct at_shim_labels labels = {label_names, KIND_REPLY, label_ids};

static unsigned label(enum label which)
{
    return at_shim_label(&labels, which);
}

/* ===== Actors, workers and the main thread ================================================ */

#define MAIN_ACTOR     (1ull << 40)
#define WORKER_ID_BASE (MAIN_ACTOR + 1)
#define MAX_WORKERS    256

static __thread int thread_core = -1;  /* the core whose worker this thread is; -1 if none */
static __thread uint64_t thread_actor; /* MAIN_ACTOR, the worker's id, or 0; valid if known */
static __thread int thread_known;
static int main_named; /* atomic */

static inline int field(const void *actor, size_t offset)
{
    return *(const int *)((const char *)actor + offset);
}

static inline uint64_t actor_id(const void *actor)
{
    return (uint32_t)field(actor, ACTOR_ID);
}

static uint64_t worker_id(int core)
{
    return WORKER_ID_BASE + (uint64_t)core;
}

static uint64_t thread_self(void)
{
    thread_known = 1;
    int other;
    AT_VECTORS_KEPT(other = gettid() != getpid());
    if (other)
        return thread_actor = 0;
    /* relaxed: one thread names main; nothing is published with it */
    if (!__atomic_exchange_n(&main_named, 1, __ATOMIC_RELAXED))
        at_name_actor(MAIN_ACTOR, "main");
    return thread_actor = MAIN_ACTOR;
}

/* The sender of what this thread sends: the actor whose step runs here, else the thread's id. */
static inline uint64_t sender(void)
{
    uint64_t actor = at_current_actor();
    if (actor)
        return actor;
    return AT_LIKELY(thread_known) ? thread_actor : thread_self();
}

/* The path of a send made by this thread to actor: base for local, base + 1 for remote. */
static inline enum label way(const void *actor, enum label base)
{
    return base + (thread_core != field(actor, ACTOR_CORE));
}

/* ===== Sends ==============================================================================
 * The outermost wrapper records the send with a new message id and, for aether_send_message
 * and ask, leaves it in `outer` for the Message the runtime builds and passes to the nested
 * send_local / remote; when the runtime delivers without a nested call (a single actor run on
 * the main thread), the step runs inside the outer call and the trampoline takes it there. */

struct outer_send {
    const void *actor;
    uint32_t msg;
};
static __thread struct outer_send outer;
static uint32_t msg_count; /* the ids handed out to threads so far; atomic, relaxed */

/* Who made each ask in flight, by ask id: asker written before msg (release); a reply reads
 * msg (acquire), the asker, then msg again, and takes the asker only when msg matched twice. */
#define ASK_SLOTS 4096
static struct {
    uint64_t asker;
    uint32_t msg;
} asks[ASK_SLOTS];

static void ask_made(uint32_t msg, uint64_t asker)
{
    /* asker, then msg with release: pairs with asker_of's acquire loads (see above) */
    __atomic_store_n(&asks[msg % ASK_SLOTS].asker, asker, __ATOMIC_RELAXED);
    __atomic_store_n(&asks[msg % ASK_SLOTS].msg, msg, __ATOMIC_RELEASE);
}

/* The actor that made ask msg, or 0 when its slot was taken by a later ask. */
static uint64_t asker_of(uint32_t msg)
{
    /* acquire: pairs with ask_made's release store of msg */
    if (__atomic_load_n(&asks[msg % ASK_SLOTS].msg, __ATOMIC_ACQUIRE) != msg)
        return 0;
    uint64_t asker = __atomic_load_n(&asks[msg % ASK_SLOTS].asker, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&asks[msg % ASK_SLOTS].msg, __ATOMIC_ACQUIRE) == msg ? asker : 0;
}

/* Ids are 31 bits; in sender_id they are tagged with the sign bit, so that a sender_id the
 * program set itself (an actor id, positive) is never taken for one. */
#define MSG_ID_MASK 0x7fffffffu
#define MSG_ID_TAG  0x80000000u

/* Each thread takes ids MSG_ID_BATCH at a time: one atomic add per batch, not a cache line
 * bouncing between the cores of two actors that message each other. */
#define MSG_ID_BATCH 1024
static __thread uint32_t id_next, id_end;

static uint32_t new_msg_id(void)
{
    if (AT_UNLIKELY(id_next == id_end)) {
        /* relaxed: unique batches of ids, no order */
        id_next = __atomic_fetch_add(&msg_count, MSG_ID_BATCH, __ATOMIC_RELAXED);
        id_end = id_next + MSG_ID_BATCH;
    }
    uint32_t msg = id_next++ & MSG_ID_MASK;
    return AT_LIKELY(msg != 0) ? msg : new_msg_id();
}

/* Records a send; msg 0 when the message cannot carry an id. */
static void record_send(const void *actor, int type, enum label path, uint32_t msg)
{
    at_record(AT_EV_SEND, actor_id(actor), sender(), msg, type_name(type), label(path));
}

/* A Message passing through a send function: recorded when the call is the outermost, and
 * given its id either way, unless the program set its sender_id. */
static void send_message(const void *actor, aether_msg *msg, enum label path, int outermost)
{
    int free_field = msg->sender_id == 0;
    uint32_t id = outer.actor == actor ? outer.msg : 0;
    if (outermost) {
        id = free_field ? new_msg_id() : 0;
        record_send(actor, msg->type, path, id);
    }
    if (free_field && id)
        msg->sender_id = (int)(id | MSG_ID_TAG);
}

/* The type of a generated message struct: its first field; -1 when there is none. */
static int struct_type(const void *data, size_t size)
{
    return data && size >= sizeof(int) ? *(const int *)data : -1;
}

/* Before a call that builds its own Message: records the send; returns what `outer` was. */
static struct outer_send begin_outer(const void *actor, const void *data, size_t size,
                                     enum label path)
{
    struct outer_send saved = outer;
    outer = (struct outer_send){actor, new_msg_id()};
    record_send(actor, struct_type(data, size), path, outer.msg);
    return saved;
}

AT_EXPORT void scheduler_send_local(void *actor, aether_msg msg)
{
    if (on()) {
        send_message(actor, &msg, PATH_LOCAL, at_enter());
        real_scheduler_send_local(actor, msg);
        at_leave();
    } else if (real_scheduler_send_local) {
        real_scheduler_send_local(actor, msg);
    }
}

AT_EXPORT void scheduler_send_remote(void *actor, aether_msg msg, int from_core)
{
    if (on()) {
        send_message(actor, &msg, PATH_REMOTE, at_enter());
        real_scheduler_send_remote(actor, msg, from_core);
        at_leave();
    } else if (real_scheduler_send_remote) {
        real_scheduler_send_remote(actor, msg, from_core);
    }
}

AT_EXPORT void scheduler_send_batch_add(void *actor, aether_msg msg)
{
    if (on()) {
        send_message(actor, &msg, way(actor, PATH_BATCH), at_enter());
        real_scheduler_send_batch_add(actor, msg);
        at_leave();
    } else if (real_scheduler_send_batch_add) {
        real_scheduler_send_batch_add(actor, msg);
    }
}

AT_EXPORT void aether_send_message(void *actor, void *message_data, size_t message_size)
{
    if (!on()) {
        if (real_aether_send_message)
            real_aether_send_message(actor, message_data, message_size);
        return;
    }
    if (!at_enter()) {
        real_aether_send_message(actor, message_data, message_size);
        at_leave();
        return;
    }
    struct outer_send saved =
        begin_outer(actor, message_data, message_size, way(actor, PATH_MESSAGE));
    real_aether_send_message(actor, message_data, message_size);
    outer = saved;
    at_leave();
}

AT_EXPORT void *scheduler_ask_message(void *actor, void *msg, size_t size, int timeout_ms)
{
    if (!on())
        return real_scheduler_ask_message ? real_scheduler_ask_message(actor, msg, size, timeout_ms)
                                          : NULL;
    if (!at_enter()) {
        void *answer = real_scheduler_ask_message(actor, msg, size, timeout_ms);
        at_leave();
        return answer;
    }
    struct outer_send saved = begin_outer(actor, msg, size, way(actor, PATH_ASK));
    ask_made(outer.msg, sender());
    void *answer = real_scheduler_ask_message(actor, msg, size, timeout_ms);
    outer = saved;
    at_leave();
    return answer;
}

/* ===== Steps ==============================================================================
 * The step each actor had, by actor address: an open-addressing table that threads read
 * without a lock. An entry's actor is claimed with a CAS and its step stored with release
 * before the trampoline replaces the actor's step pointer; an address the runtime reuses for
 * a new actor takes over its entry. */

#define STEP_SLOTS (1u << 16)

struct step_entry {
    void *actor;   /* claimed once, with a CAS */
    step_fn *step; /* release / acquire */
};
static struct step_entry steps[STEP_SLOTS];
static __thread uint32_t current_msg; /* the id of the message the running step took */

static size_t step_slot(const void *actor)
{
    return (size_t)(((uintptr_t)actor >> 4) * 0x9e3779b97f4a7c15ull >> 48) % STEP_SLOTS;
}

/* Returns 0, or -1 when the table is full. */
static int steps_put(void *actor, step_fn *step)
{
    for (size_t i = step_slot(actor), n = 0; n < STEP_SLOTS; i = (i + 1) % STEP_SLOTS, n++) {
        void *expected = NULL;
        /* actor: acquire, and the CAS that claims a free slot acq_rel, pair with each other;
         * step: release, pairs with steps_get's acquire load */
        if (__atomic_load_n(&steps[i].actor, __ATOMIC_ACQUIRE) == actor ||
            __atomic_compare_exchange_n(&steps[i].actor, &expected, actor, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&steps[i].step, step, __ATOMIC_RELEASE);
            return 0;
        }
    }
    return -1;
}

static step_fn *steps_get(const void *actor)
{
    for (size_t i = step_slot(actor), n = 0; n < STEP_SLOTS; i = (i + 1) % STEP_SLOTS, n++) {
        /* acquire: pairs with steps_put's CAS of actor; step: with its release store */
        void *key = __atomic_load_n(&steps[i].actor, __ATOMIC_ACQUIRE);
        if (key == actor)
            return __atomic_load_n(&steps[i].step, __ATOMIC_ACQUIRE);
        if (key == NULL)
            return NULL;
    }
    return NULL;
}

/* The message the step is about to take: the one at the mailbox head; its id, and its type's
 * name id (0 when the mailbox is empty). */
static void head_message(const void *actor, uint32_t *msg, uint32_t *type)
{
    const char *mailbox = (const char *)actor + ACTOR_MAILBOX;
    *msg = *type = 0;
    if (field(mailbox, MAILBOX_COUNT) > 0) {
        const aether_msg *head =
            (const aether_msg *)mailbox + (field(mailbox, MAILBOX_HEAD) & (MAILBOX_SLOTS - 1));
        uint32_t tagged = (uint32_t)head->sender_id;
        *msg = tagged & MSG_ID_TAG ? tagged & MSG_ID_MASK : 0;
        *type = type_name(head->type);
    }
    if (*msg == 0 && outer.actor == actor)
        *msg = outer.msg;
}

/* A running step, and what the thread had before it. A panic leaves the step by a jump to the
 * runtime's barrier (longjmp): the recorder then calls step_left (actortrace.h, at_frame),
 * which ends the step as the trampoline would have, its step_end with the path "abandoned". */
struct step_frame {
    struct at_frame frame;
    uint64_t id, previous_actor;
    uint32_t msg, type, previous_msg;
    struct outer_send previous_outer;
};

static void step_end(const struct step_frame *s, unsigned path)
{
    at_set_current_actor(s->previous_actor);
    at_record(AT_EV_STEP_END, s->id, 0, s->msg, s->type, path);
    current_msg = s->previous_msg;
    outer = s->previous_outer;
}

/* May run in a signal handler (a fault turned into a panic): the label is registered at the
 * actor's spawn. */
static void step_left(struct at_frame *frame)
{
    step_end((struct step_frame *)frame, at_shim_label_registered(&labels, PATH_ABANDONED));
}

static void step_trampoline(void *actor)
{
    step_fn *step = steps_get(actor);
    /* field by field, not zeroed first: every field is set below (the frame by at_frame_push),
     * and zeroing it all cost a third of the trampoline's own instructions */
    struct step_frame s;
    s.id = actor_id(actor);
    s.previous_msg = current_msg;
    s.previous_outer = outer;
    head_message(actor, &s.msg, &s.type);
    outer = (struct outer_send){0};
    current_msg = s.msg;
    at_record(AT_EV_STEP_BEGIN, s.id, 0, s.msg, s.type, 0);
    s.previous_actor = at_set_current_actor(s.id);
    at_frame_push(&s.frame, step_left);
    uint32_t depth = at_depth_reset();
    if (step)
        step(actor);
    at_depth_restore(depth);
    at_frame_pop(&s.frame);
    step_end(&s, 0);
}

AT_EXPORT void scheduler_reply(void *actor, void *data, size_t size)
{
    if (!on()) {
        if (real_scheduler_reply)
            real_scheduler_reply(actor, data, size);
        return;
    }
    if (at_enter()) {
        at_record(label(KIND_REPLY), asker_of(current_msg), sender(), current_msg,
                  type_name(struct_type(data, size)), 0);
    }
    real_scheduler_reply(actor, data, size);
    at_leave();
}

/* ===== Spawn, schedule, exit ============================================================== */

/* Takes over a registered actor's step and records its spawn and its placement. */
static void adopt(void *actor)
{
    step_fn **slot = (step_fn **)((char *)actor + ACTOR_STEP);
    step_fn *step = *slot;
    if (step != step_trampoline && steps_put(actor, step) == 0)
        *slot = step_trampoline;
    label(PATH_ABANDONED); /* for step_left, which must not register it */
    uint64_t id = actor_id(actor);
    at_record(AT_EV_SPAWN, id, sender(), 0, 0, 0);
    at_record(AT_EV_SCHEDULE, id, worker_id(field(actor, ACTOR_CORE)), 0, 0, 0);
}

AT_EXPORT void *scheduler_spawn_actor(int preferred_core, step_fn *step, size_t actor_size)
{
    if (!on())
        return real_scheduler_spawn_actor
                   ? real_scheduler_spawn_actor(preferred_core, step, actor_size)
                   : NULL;
    at_enter(); /* the runtime's own scheduler_register_actor is part of this spawn */
    void *actor = real_scheduler_spawn_actor(preferred_core, step, actor_size);
    at_leave();
    if (!actor)
        return NULL;
    if (*(step_fn **)((char *)actor + ACTOR_STEP) != step)
        switch_off("the step pointer is not where v0.572.0 has it (another version?)");
    else
        adopt(actor);
    return actor;
}

/* An actor the program allocated and registers itself. */
AT_EXPORT int scheduler_register_actor(void *actor, int preferred_core)
{
    if (!on() || at_in_wrapper())
        return real_scheduler_register_actor ? real_scheduler_register_actor(actor, preferred_core)
                                             : -1;
    int result = real_scheduler_register_actor(actor, preferred_core);
    Dl_info info;
    int found;
    AT_VECTORS_KEPT(found = dladdr(*(void **)((char *)actor + ACTOR_STEP), &info));
    if (!found)
        switch_off("no function where v0.572.0 has the step pointer (another version?)");
    else
        adopt(actor);
    return result;
}

AT_EXPORT void scheduler_release_actor(void *actor)
{
    if (on() && actor)
        at_record(AT_EV_EXIT, actor_id(actor), 0, 0, 0, 0);
    if (real_scheduler_release_actor)
        real_scheduler_release_actor(actor);
}

/* ===== Workers ============================================================================
 * parked[core] is the condvar the core's worker waits on (written by the worker, relaxed) and
 * who signalled it last (exchanged by the worker when the wait ends). */

static struct {
    const void *cond;
    uint64_t waker;
} parked[MAX_WORKERS];
static int worker_count; /* one past the highest core seen; atomic, relaxed */

static void worker_park(const void *cond)
{
    int core = thread_core;
    /* relaxed: a hint for worker_wake (see the top of this section) */
    __atomic_store_n(&parked[core].cond, cond, __ATOMIC_RELAXED);
    at_record(AT_EV_PARK, thread_actor, 0, 0, 0, label(PATH_WORKER));
}

static void worker_unpark(const void *cond)
{
    int core = thread_core;
    (void)cond;
    /* relaxed: cond and waker are hints; the exchange takes the last waker once */
    __atomic_store_n(&parked[core].cond, NULL, __ATOMIC_RELAXED);
    uint64_t waker = __atomic_exchange_n(&parked[core].waker, 0, __ATOMIC_RELAXED);
    at_record(AT_EV_UNPARK, thread_actor, waker, 0, 0, label(PATH_WORKER));
}

static void worker_wake(const void *cond)
{
    /* relaxed: hints (see the top of this section); a waker missed leaves unpark's peer 0 */
    int n = __atomic_load_n(&worker_count, __ATOMIC_RELAXED);
    for (int core = 0; core < n; core++)
        if (__atomic_load_n(&parked[core].cond, __ATOMIC_RELAXED) == cond)
            __atomic_store_n(&parked[core].waker, sender(), __ATOMIC_RELAXED);
}

/* The runtime parks idle workers in pthread_cond_timedwait: shim/glibc.c calls these. */
static const struct at_workers workers = {"aether", worker_park, worker_unpark, worker_wake};

AT_EXPORT void *scheduler_thread(void *arg)
{
    int core = arg ? *(const int *)arg : -1;
    if (on() && core >= 0 && core < MAX_WORKERS) {
        char name[32];
        AT_VECTORS_KEPT(snprintf(name, sizeof name, "worker-%d", core));
        at_name_actor(worker_id(core), name);
        thread_core = core;
        thread_actor = worker_id(core);
        thread_known = 1;
        /* relaxed: a count raised to the highest core seen; worker_wake only bounds a
         * scan by it */
        int seen = __atomic_load_n(&worker_count, __ATOMIC_RELAXED);
        while (seen <= core && !__atomic_compare_exchange_n(&worker_count, &seen, core + 1, 0,
                                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
        at_workers_thread(&workers);
    }
    return real_scheduler_thread ? real_scheduler_thread(arg) : NULL;
}
