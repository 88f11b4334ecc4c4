/* Shim for refrt, the reference runtime of tests/targets/rt (refrt.h).
 *
 * Wrapped: rt_msg_type (message names), rt_spawn (spawn + actor name), rt_send (send),
 * rt_receive (recv), rt_step (step_begin / step_end; sets the current actor, so sends made by
 * the handler name their sender), rt_schedule (schedule), rt_park / rt_unpark (park / unpark of
 * a worker), rt_exit (exit). refrt's own calls to these go through the PLT, so each runtime
 * operation is seen once, wherever it comes from.
 *
 * Workers are not actors, but they are what parks: a worker gets the id WORKER_ID_BASE + its
 * number (far above any actor id, still exact in a JSON double) and the name "worker-N". */
/* The wrappers may run behind patched entries, which save no vector register: general registers
 * only, before any header's inline functions (include/at_vectors.h). */
#pragma GCC target("general-regs-only")
#include <stdio.h>

#include "actortrace.h"
#include "at_vectors.h"
#include "refrt.h"
#include "support.h"

AT_REAL(rt_msg_type);
AT_REAL(rt_spawn);
AT_REAL(rt_send);
AT_REAL(rt_receive);
AT_REAL(rt_step);
AT_REAL(rt_schedule);
AT_REAL(rt_park);
AT_REAL(rt_unpark);
AT_REAL(rt_exit);

static struct at_shim shim = {
    .reals =
        AT_SHIM_REALS(AT_SHIM_REAL(rt_msg_type), AT_SHIM_REAL(rt_spawn), AT_SHIM_REAL(rt_send),
                      AT_SHIM_REAL(rt_receive), AT_SHIM_REAL(rt_step), AT_SHIM_REAL(rt_schedule),
                      AT_SHIM_REAL(rt_park), AT_SHIM_REAL(rt_unpark), AT_SHIM_REAL(rt_exit)),
    .runtime = "refrt",
};

/* Each wrapper may also stand in for a patched entry: refrt linked into the program, or built
 * so that its own calls are direct. */
AT_PATCH_TABLE(AT_PATCHABLE(rt_msg_type, AT_RETURN_RAX), AT_PATCHABLE(rt_spawn, AT_RETURN_RAX),
               AT_PATCHABLE(rt_send, AT_RETURNS_NOTHING), AT_PATCHABLE(rt_receive, AT_RETURN_RAX),
               AT_PATCHABLE(rt_step, AT_RETURN_RAX), AT_PATCHABLE(rt_schedule, AT_RETURNS_NOTHING),
               AT_PATCHABLE(rt_park, AT_RETURNS_NOTHING),
               AT_PATCHABLE(rt_unpark, AT_RETURNS_NOTHING),
               AT_PATCHABLE(rt_exit, AT_RETURNS_NOTHING));

#define WORKER_ID_BASE    (1ull << 40)
#define MAX_NAMED_WORKERS 1024

enum label { PATH_WORKER, LABELS };
static const char *const label_names[LABELS] = {"worker"};
static unsigned label_ids[LABELS];
static const struct at_shim_labels labels = {label_names, LABELS, label_ids};
static uint8_t worker_named[MAX_NAMED_WORKERS]; /* written once per worker, races harmless */

static uint64_t actor_id(const rt_actor *actor)
{
    return actor ? ((const struct rt_actor_head *)actor)->id : 0;
}

AT_EXPORT uint32_t rt_msg_type(const char *name)
{
    AT_SHIM_RESOLVE(&shim, real_rt_msg_type);
    uint32_t id = real_rt_msg_type(name);
    at_name_msg(id, name);
    return id;
}

AT_EXPORT rt_actor *rt_spawn(const char *name, rt_behavior behavior, void *state)
{
    AT_SHIM_RESOLVE(&shim, real_rt_spawn);
    rt_actor *child = real_rt_spawn(name, behavior, state);
    if (child) {
        /* after the call: the id exists only now, and no message can reach the child before
         * rt_spawn has returned it */
        at_record(AT_EV_SPAWN, actor_id(child), at_current_actor(), 0, 0, 0);
        if (name)
            at_name_actor(actor_id(child), name);
    }
    return child;
}

/* The stamp of the send whose rt_send runs on this thread: the schedule it makes shares its
 * timestamp (at_timestamp_after). */
static __thread struct at_stamp send_stamp;

AT_EXPORT void rt_send(rt_actor *to, rt_msg *msg)
{
    AT_SHIM_RESOLVE(&shim, real_rt_send);
    uint64_t now = at_timestamp();
    at_record_at(&now, AT_EV_SEND, actor_id(to), at_current_actor(), msg->id, msg->type, 0);
    struct at_stamp outer = send_stamp;
    send_stamp = at_stamp_of(now);
    real_rt_send(to, msg);
    send_stamp = outer;
}

/* The last recv's message and stamp: the step refrt's worker runs on it next shares the
 * timestamp (at_timestamp_after). */
static __thread struct {
    uint64_t msg;
    struct at_stamp stamp;
} received;

AT_EXPORT rt_msg *rt_receive(rt_actor *actor)
{
    AT_SHIM_RESOLVE(&shim, real_rt_receive);
    rt_msg *msg = real_rt_receive(actor);
    if (msg) {
        uint64_t now = at_timestamp();
        at_record_at(&now, AT_EV_RECV, actor_id(actor), msg->sender, msg->id, msg->type, 0);
        received.msg = msg->id;
        received.stamp = at_stamp_of(now);
    }
    return msg;
}

AT_EXPORT int rt_step(rt_actor *actor, rt_msg *msg)
{
    AT_SHIM_RESOLVE(&shim, real_rt_step);
    uint64_t id = actor_id(actor), msg_id = msg->id;
    uint32_t type = msg->type; /* rt_step frees msg */
    uint64_t begun = msg_id == received.msg ? at_timestamp_after(received.stamp) : at_timestamp();
    at_record_at(&begun, AT_EV_STEP_BEGIN, id, 0, msg_id, type, 0);
    uint64_t previous = at_set_current_actor(id);
    int result = real_rt_step(actor, msg);
    at_set_current_actor(previous);
    at_record(AT_EV_STEP_END, id, 0, msg_id, type, 0);
    return result;
}

AT_EXPORT void rt_schedule(rt_actor *actor)
{
    AT_SHIM_RESOLVE(&shim, real_rt_schedule);
    uint64_t stamp = at_timestamp_after(send_stamp);
    at_record_at(&stamp, AT_EV_SCHEDULE, actor_id(actor), at_current_actor(), 0, 0, 0);
    real_rt_schedule(actor);
}

/* The id of worker `worker`, named on first use. */
static uint64_t worker_id(int worker)
{
    if (AT_UNLIKELY(worker >= 0 && worker < MAX_NAMED_WORKERS && !worker_named[worker])) {
        char name[32];
        AT_VECTORS_KEPT(snprintf(name, sizeof name, "worker-%d", worker));
        at_name_actor(WORKER_ID_BASE + (uint64_t)worker, name);
        worker_named[worker] = 1;
    }
    return WORKER_ID_BASE + (uint64_t)worker;
}

static unsigned worker_path(void)
{
    return at_shim_label(&labels, PATH_WORKER);
}

AT_EXPORT void rt_park(int worker)
{
    AT_SHIM_RESOLVE(&shim, real_rt_park);
    at_record(AT_EV_PARK, worker_id(worker), 0, 0, 0, worker_path());
    at_enter(); /* the wait inside is this park: lower layers (glibc.c) record nothing */
    real_rt_park(worker);
    at_leave();
}

AT_EXPORT void rt_unpark(int worker)
{
    AT_SHIM_RESOLVE(&shim, real_rt_unpark);
    at_record(AT_EV_UNPARK, worker_id(worker), at_current_actor(), 0, 0, worker_path());
    at_enter();
    real_rt_unpark(worker);
    at_leave();
}

AT_EXPORT void rt_exit(rt_actor *actor)
{
    AT_SHIM_RESOLVE(&shim, real_rt_exit);
    at_record(AT_EV_EXIT, actor_id(actor), 0, 0, 0, 0);
    real_rt_exit(actor);
}
