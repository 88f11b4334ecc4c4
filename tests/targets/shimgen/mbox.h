/* mbox: a small thread-per-actor runtime that shimgen's test traces (tests/e2e/shimgen.sh) with
 * a shim generated from mbox.spec. Each actor is a thread running its body, which takes
 * messages out of its mailbox with a blocking mb_receive. The runtime logs every operation
 * itself: that log is the ground truth a trace must equal. Its calls to its own exported
 * functions go through the PLT (built -fPIC, default visibility), as in refrt. */
#ifndef MBOX_H
#define MBOX_H

#include <stdint.h>

typedef struct mb_actor mb_actor;

/* An actor starts with its name, then its id (from 1): the shim reads the id at offset 16. */
struct mb_actor_head {
    char name[16];
    uint64_t id;
};

/* A message. Offsets: id 0, sender 8, type 16, name 24. */
struct mb_msg {
    uint64_t id;     /* unique in the process, from 1 */
    uint64_t sender; /* id of the sending actor, 0 from outside any actor */
    uint32_t type;   /* enum mb_type */
    uint32_t reserved;
    const char *name; /* the type's name, or the name a named message was sent with */
    intptr_t payload;
    mb_actor *from;      /* the sending actor, NULL from outside any actor */
    struct mb_msg *next; /* mailbox link, owned by the runtime */
};

/* A send: the receiver is a field of the envelope. Offsets: to 8, msg 16. */
struct mb_envelope {
    uint32_t flags;
    uint32_t reserved;
    mb_actor *to;
    struct mb_msg *msg;
};

enum mb_type { MB_PING = 1, MB_PONG = 2, MB_STOP = 3, MB_NAMED = 4 };

/* An actor's body: runs once on the actor's own thread; the actor exits when it returns. */
typedef void (*mb_body)(mb_actor *self, void *arg);

/* Starts an actor running body(self, arg) on a thread of its own. `name` is copied (15
 * characters at most). NULL when the thread cannot start. */
mb_actor *mb_spawn(const char *name, mb_body body, void *arg);
/* A message of `type` with a fresh id, its name the type's name. */
struct mb_msg *mb_msg_new(uint32_t type, intptr_t payload);
/* Appends env->msg to env->to's mailbox; the message then belongs to the receiver. */
void mb_post(const struct mb_envelope *env);
/* Sends a MB_NAMED message called `name` (kept, not copied) through mb_post; returns its id. */
uint64_t mb_send_named(mb_actor *to, const char *name, intptr_t payload);
/* Sends MB_STOP through mb_post; returns the message's id. */
uint64_t mb_stop(mb_actor *to);
/* Blocks until a message is in self's mailbox and takes it out. */
struct mb_msg *mb_receive(mb_actor *self);
/* Frees a message the actor has handled. */
void mb_free(struct mb_msg *msg);
mb_actor *mb_self(void);
uint64_t mb_id(const mb_actor *actor);
/* Called by the runtime when an actor's body has returned. */
void mb_exit(mb_actor *self);
/* Waits for every actor spawned so far to exit. */
void mb_join(void);
/* Prints the log, one {"truth":{"event":...,"actor":...,"peer":...,"msg":...,"msg_name":...}}
 * line per operation, then {"ground_truth":{KIND:COUNT,...}}. */
void mb_print_ground_truth(void);

#endif
