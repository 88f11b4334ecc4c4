/* A stand-in for the ABI of Aether v0.572.0's runtime, written for actortrace's tests: the
 * functions a program compiled by Aether calls, with Aether's signatures, its Message and
 * ActorBase layouts (checked below) and its calling habits. It is not Aether: Aether is not a
 * Debian package and its source is not part of this project. shim/aether.c is tested against the
 * shared library built from runtime.c; the programs beside it are written the way Aether's
 * generated C is (a step function per actor that takes one message from its mailbox, the
 * local-or-remote choice inlined, batch sends in loops). */
#ifndef AETHER_ABI_H
#define AETHER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* 48 bytes, passed by value. */
typedef struct Message {
    int type;
    int sender_id;
    intptr_t payload_int;
    void *payload_ptr;
    struct {
        void *data;
        int size;
        int owned;
    } zerocopy;
    void *_reply_slot;
} Message;

#define MAILBOX_SLOTS 32

typedef struct Mailbox {
    Message messages[MAILBOX_SLOTS];
    int head; /* the slot of the oldest message */
    int tail;
    int count;
    int reserved;
} Mailbox;

typedef struct ActorBase {
    int active;
    int id;
    Mailbox mailbox;
    void (*step)(void *self);
    int dead;
    int queued; /* on its core's run queue; owned by that core's thread */
    int reserved0;
    int assigned_core;
    char reserved1[64];
} ActorBase;

_Static_assert(sizeof(Message) == 48, "Message is 48 bytes");
_Static_assert(offsetof(ActorBase, id) == 4, "ActorBase.id");
_Static_assert(offsetof(ActorBase, mailbox) == 8, "ActorBase.mailbox");
_Static_assert(offsetof(Mailbox, head) == 1536, "Mailbox.head");
_Static_assert(offsetof(Mailbox, count) == 1544, "Mailbox.count");
_Static_assert(offsetof(ActorBase, step) == 1560, "ActorBase.step");
_Static_assert(offsetof(ActorBase, assigned_core) == 1580, "ActorBase.assigned_core");
_Static_assert(sizeof(ActorBase) == 1648, "ActorBase size");

/* The core whose worker runs on this thread; -1 on any other thread. */
extern __thread int current_core_id;

void scheduler_init(int cores);
void scheduler_start(void);
void scheduler_wait(void);
void scheduler_shutdown(void);
void *scheduler_thread(void *arg); /* arg's first field is the core id */

ActorBase *scheduler_spawn_actor(int preferred_core, void (*step)(void *), size_t actor_size);
int scheduler_register_actor(ActorBase *actor, int preferred_core);
void scheduler_release_actor(ActorBase *actor);

void scheduler_send_local(ActorBase *actor, Message msg);
void scheduler_send_remote(ActorBase *actor, Message msg, int from_core);
void scheduler_send_batch_start(void);
void scheduler_send_batch_add(ActorBase *actor, Message msg);
void scheduler_send_batch_flush(void);
/* message_data starts with the int message type, as every generated message struct does. */
void aether_send_message(void *actor_ptr, void *message_data, size_t message_size);
void *scheduler_ask_message(ActorBase *actor, void *msg, size_t size, int timeout_ms);
void scheduler_reply(ActorBase *actor, void *data, size_t size);
/* Leaves the running step by a jump to the scheduler's panic barrier; the actor is dead. */
void aether_panic(const char *reason) __attribute__((noreturn));

/* What the generated step functions inline: takes the oldest message; 0 when there is none. */
static inline int mailbox_receive(Mailbox *mailbox, Message *out)
{
    if (mailbox->count == 0)
        return 0;
    *out = mailbox->messages[mailbox->head];
    mailbox->head = (mailbox->head + 1) % MAILBOX_SLOTS;
    mailbox->count--;
    return 1;
}

/* How generated code sends a single-int message: local when the target lives on this core. */
static inline void aether_send_int(ActorBase *actor, int type, intptr_t value)
{
    Message msg = {.type = type, .payload_int = value};
    if (current_core_id == actor->assigned_core)
        scheduler_send_local(actor, msg);
    else
        scheduler_send_remote(actor, msg, current_core_id);
}

/* ---- The stand-in's own, not Aether's: the ground truth the tests compare a trace with ---- */

/* Prints {"ground_truth":{...}}: the runtime's count of each operation (sends by the function
 * the program called and the way it went, steps, spawns, registrations, releases, asks,
 * replies, worker condvar waits), and the wall and CPU time from scheduler_start to the end
 * of scheduler_wait, which the benchmark compares. */
void standin_print_ground_truth(void);

#endif
