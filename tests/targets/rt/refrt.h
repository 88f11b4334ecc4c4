/* refrt: the reference actor runtime that actortrace's tests and demo trace. A small M:N
 * runtime: actors with FIFO mailboxes, a run queue served by N worker threads, idle workers that
 * park on a futex and are woken when work arrives. Every operation below is an exported
 * function, and the runtime's own calls to them go through the PLT (built -fPIC, default
 * visibility, no -Bsymbolic), so an LD_PRELOAD shim sees each one. The runtime counts every
 * call itself: that count is the ground truth a trace is checked against. */
#ifndef REFRT_H
#define REFRT_H

#include <stdint.h>

/* A message. Layout is public: the shim reads id, sender and type. */
typedef struct rt_msg {
    uint64_t id;     /* unique in the process, from 1, given by rt_msg_new */
    uint64_t sender; /* id of the actor that sent it; 0 when sent from outside any actor */
    uint32_t type;   /* a registered message type (rt_msg_type) */
    uint32_t reserved;
    intptr_t payload;
    struct rt_msg *next; /* mailbox link, owned by the runtime */
} rt_msg;

typedef struct rt_actor rt_actor;

/* An actor's first field is its id (from 1); the shim reads it there. */
struct rt_actor_head {
    uint64_t id;
};

enum { RT_CONTINUE = 0, RT_STOP = 1 };

/* A behaviour handles one message; returns RT_STOP to end the actor after this message. */
typedef int (*rt_behavior)(rt_actor *self, rt_msg *msg, void *state);

/* ---- The program's API ---- */

/* Starts `workers` worker threads (<= 0: the RT_WORKERS environment variable, else 2).
 * Returns 0 or a negative errno. */
int rt_init(int workers);
/* Registers a message type name; the same name gives the same id (from 1). */
uint32_t rt_msg_type(const char *name);
/* Creates an actor; it runs when it has messages. `name` is copied. */
rt_actor *rt_spawn(const char *name, rt_behavior behavior, void *state);
/* Allocates a message with a fresh id; rt_step frees it after the handler. */
rt_msg *rt_msg_new(uint32_t type, intptr_t payload);
/* Appends msg to the actor's mailbox (any thread) and schedules the actor if it was idle. The
 * sender is the actor running on the calling thread, if any. */
void rt_send(rt_actor *to, rt_msg *msg);
/* rt_send(to, rt_msg_new(type, payload)). */
void rt_tell(rt_actor *to, uint32_t type, intptr_t payload);
uint64_t rt_actor_id(const rt_actor *actor);
/* The actor whose handler runs on this thread, or NULL. */
rt_actor *rt_self(void);
/* Blocks until every spawned actor has exited. */
void rt_wait(void);
/* Stops and joins the workers. */
void rt_shutdown(void);
/* Prints {"ground_truth":{"spawn":N,"send":N,"recv":N,"step":N,"schedule":N,"park":N,
 * "unpark":N,"exit":N}} and a newline on stdout. */
void rt_print_ground_truth(void);

/* ---- The runtime's internal steps, exported so a tracer can see them ---- */

/* Makes an idle actor runnable: pushes it on the run queue and unparks a worker if one is
 * parked. */
void rt_schedule(rt_actor *actor);
/* Takes the next message out of the actor's mailbox; NULL when it is empty. */
rt_msg *rt_receive(rt_actor *actor);
/* Runs the actor's behaviour on one message, then frees the message. Returns RT_CONTINUE or
 * RT_STOP. */
int rt_step(rt_actor *actor, rt_msg *msg);
/* Worker `worker` (from 1) blocks until rt_unpark(worker). */
void rt_park(int worker);
/* Wakes parked worker `worker`. */
void rt_unpark(int worker);
/* The actor has stopped: the runtime releases it. */
void rt_exit(rt_actor *actor);

#endif
