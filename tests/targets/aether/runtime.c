/* The stand-in for Aether v0.572.0's runtime (aether_abi.h), built as libaether.so: not Aether,
 * a small runtime of our own with Aether's exported functions, layouts and calling habits, so
 * that shim/aether.c can be tested without Aether.
 *
 * The habits it reproduces: one worker thread per core, each with a run queue of the actors
 * assigned to it and a queue of messages other threads sent there; a worker runs an actor by
 * calling its step pointer, which takes one message from the mailbox; an idle worker spins
 * IDLE_SPINS times, then parks in pthread_cond_timedwait and is woken with pthread_cond_signal.
 * The runtime's own calls to its exported functions go through the PLT (built -fPIC, default
 * visibility, no -Bsymbolic): aether_send_message and scheduler_ask_message call
 * scheduler_send_local / remote, scheduler_send_batch_add calls scheduler_send_batch_start and
 * _flush, scheduler_spawn_actor calls scheduler_register_actor. A flush delivers without them.
 * A program that starts the scheduler with a single actor runs it on the main thread: sends
 * then run the step inline, and aether_send_message delivers without calling a send function.
 * Each step runs inside a panic barrier: aether_panic leaves the step by _longjmp (not
 * siglongjmp: Aether saves no signal mask per step) to the innermost barrier of the thread,
 * and the actor is then dead; its later messages are dropped.
 *
 * The runtime counts each operation itself: that count is the ground truth of the tests. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aether_abi.h"

/* Built with -DSTEP_MOVED, the runtime keeps the step pointer elsewhere in ActorBase, as
 * another Aether version might: the shim's layout check must then switch it off. */
#ifdef STEP_MOVED
#define STEP(actor) (*(void (**)(void *))(void *)(actor)->reserved1)
#else
#define STEP(actor) ((actor)->step)
#endif

#define MAX_CORES   8
#define MAX_ACTORS  1024 /* per core */
#define IDLE_SPINS  10000
#define PARK_NS     10000000L
#define BATCH_SLOTS 64

__thread int current_core_id = -1;

struct posted {
    ActorBase *actor;
    Message msg;
};

struct core {
    int id; /* first: scheduler_thread's argument starts with the core id */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int sleeping;         /* under lock */
    struct posted *inbox; /* under lock: sent from other threads, or a full mailbox's overflow */
    size_t ninbox, capinbox;
    int has_inbox;               /* atomic: what the worker polls without the lock */
    ActorBase *runq[MAX_ACTORS]; /* owned by the worker */
    size_t runq_head, runq_len;
};

struct reply_slot {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int done;
    void *data;
};

enum count {
    N_LOCAL,
    N_REMOTE,
    N_MESSAGE_LOCAL,
    N_MESSAGE_REMOTE,
    N_BATCH_LOCAL,
    N_BATCH_REMOTE,
    N_ASK_LOCAL,
    N_ASK_REMOTE,
    N_STEP,
    N_REGISTER,
    N_RELEASE,
    N_REPLY,
    N_PARK,
    N_DROP_DEAD,
    N_PANIC,
    N_COUNTS
};
static const char *const count_names[N_COUNTS] = {
    "local",        "remote",    "message_local", "message_remote", "batch_local",
    "batch_remote", "ask_local", "ask_remote",    "step",           "spawn",
    "exit",         "reply",     "park",          "drop_dead",      "panic"};
static long counts[N_COUNTS]; /* atomic */

static struct core cores[MAX_CORES];
static int ncores = 1;
static int main_thread_mode, stopping;           /* stopping: atomic */
static int next_actor_id, registered, next_core; /* atomic */
static long in_flight; /* atomic: messages sent and not yet taken by a step */
/* From scheduler_start to the end of scheduler_wait: wall time, and CPU time of all threads */
static long started_ns, elapsed_ns, started_cpu_ns, cpu_ns;

static __thread int inside_api;           /* a send function called by the runtime itself */
static __thread struct reply_slot *asker; /* the reply slot of the message the step takes */
static __thread struct posted batch[BATCH_SLOTS];
static __thread int batch_len, batch_open;

static void count(enum count which)
{
    __atomic_add_fetch(&counts[which], 1, __ATOMIC_RELAXED);
}

static int is_local(const ActorBase *actor)
{
    return current_core_id == actor->assigned_core;
}

/* ---- Delivery ---- */

/* The innermost panic barrier of the thread: the step aether_panic leaves. */
static __thread jmp_buf *barrier;

void aether_panic(const char *reason)
{
    if (!barrier) {
        fprintf(stderr, "aether stand-in: panic outside a step: %s\n", reason);
        abort();
    }
    _longjmp(*barrier, 1);
}

static void run_step(ActorBase *actor)
{
    Mailbox *m = &actor->mailbox;
    asker = m->count ? m->messages[m->head]._reply_slot : NULL;
    jmp_buf here;
    jmp_buf *outer = barrier;
    barrier = &here;
    if (_setjmp(here) == 0) {
        STEP(actor)(actor); /* always through the pointer, as aether_step_safe does */
    } else {
        actor->dead = 1;
        count(N_PANIC);
    }
    barrier = outer;
    asker = NULL;
    count(N_STEP);
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_RELEASE);
}

static void make_runnable(struct core *c, ActorBase *actor)
{
    if (actor->queued)
        return;
    actor->queued = 1;
    c->runq[(c->runq_head + c->runq_len++) % MAX_ACTORS] = actor;
}

static ActorBase *next_runnable(struct core *c)
{
    if (c->runq_len == 0)
        return NULL;
    ActorBase *actor = c->runq[c->runq_head];
    c->runq_head = (c->runq_head + 1) % MAX_ACTORS;
    c->runq_len--;
    return actor;
}

static void post(struct core *c, ActorBase *actor, Message msg)
{
    pthread_mutex_lock(&c->lock);
    if (c->ninbox == c->capinbox) {
        size_t cap = c->capinbox ? 2 * c->capinbox : 256;
        struct posted *grown = realloc(c->inbox, cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "aether stand-in: out of memory\n");
            exit(1);
        }
        c->inbox = grown;
        c->capinbox = cap;
    }
    c->inbox[c->ninbox++] = (struct posted){actor, msg};
    __atomic_store_n(&c->has_inbox, 1, __ATOMIC_RELEASE);
    if (c->sleeping)
        pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

/* Into the mailbox, on the thread of the actor's core; a full mailbox overflows to the inbox. */
static void deliver(ActorBase *actor, Message msg)
{
    struct core *c = &cores[actor->assigned_core];
    Mailbox *m = &actor->mailbox;
    if (actor->dead) {
        count(N_DROP_DEAD);
        __atomic_sub_fetch(&in_flight, 1, __ATOMIC_RELEASE);
        return;
    }
    if (m->count == MAILBOX_SLOTS) {
        post(c, actor, msg);
        return;
    }
    m->messages[m->tail] = msg;
    m->tail = (m->tail + 1) % MAILBOX_SLOTS;
    m->count++;
    if (main_thread_mode)
        run_step(actor);
    else
        make_runnable(c, actor);
}

/* From any thread: straight into the mailbox on the actor's own core, else through its inbox. */
static void send_any(ActorBase *actor, Message msg)
{
    __atomic_add_fetch(&in_flight, 1, __ATOMIC_RELAXED);
    if (main_thread_mode || is_local(actor))
        deliver(actor, msg);
    else
        post(&cores[actor->assigned_core], actor, msg);
}

static void drain_inbox(struct core *c)
{
    pthread_mutex_lock(&c->lock);
    struct posted *items = c->inbox;
    size_t n = c->ninbox;
    c->inbox = NULL;
    c->ninbox = c->capinbox = 0;
    __atomic_store_n(&c->has_inbox, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n; i++)
        deliver(items[i].actor, items[i].msg);
    free(items);
}

/* One wait on the core's condvar: woken by a post, or PARK_NS later. */
static void park(struct core *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->ninbox == 0 && !__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += PARK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        c->sleeping = 1;
        count(N_PARK);
        pthread_cond_timedwait(&c->wake, &c->lock, &until);
        c->sleeping = 0;
    }
    pthread_mutex_unlock(&c->lock);
}

void *scheduler_thread(void *arg)
{
    struct core *c = arg;
    current_core_id = c->id;
    unsigned idle = 0;
    while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&c->has_inbox, __ATOMIC_ACQUIRE))
            drain_inbox(c);
        ActorBase *actor = next_runnable(c);
        if (actor) {
            run_step(actor);
            actor->queued = 0;
            if (actor->mailbox.count > 0)
                make_runnable(c, actor);
            idle = 0;
        } else if (++idle >= IDLE_SPINS) {
            park(c);
            idle = 0;
        }
    }
    return NULL;
}

/* ---- Lifecycle ---- */

void scheduler_init(int n)
{
    ncores = n < 1 ? 1 : n > MAX_CORES ? MAX_CORES : n;
    for (int i = 0; i < ncores; i++) {
        cores[i].id = i;
        pthread_mutex_init(&cores[i].lock, NULL);
        pthread_cond_init(&cores[i].wake, NULL);
    }
}

static long now_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

void scheduler_start(void)
{
    started_ns = now_ns(CLOCK_MONOTONIC);
    started_cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    main_thread_mode = __atomic_load_n(&registered, __ATOMIC_RELAXED) == 1;
    for (int i = 0; i < ncores && !main_thread_mode; i++)
        if (pthread_create(&cores[i].thread, NULL, scheduler_thread, &cores[i]) != 0) {
            fprintf(stderr, "aether stand-in: cannot start worker %d\n", i);
            exit(1);
        }
}

void scheduler_wait(void)
{
    const struct timespec pause = {0, 50000};
    while (__atomic_load_n(&in_flight, __ATOMIC_ACQUIRE) > 0)
        nanosleep(&pause, NULL);
    elapsed_ns = now_ns(CLOCK_MONOTONIC) - started_ns;
    cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID) - started_cpu_ns;
}

void scheduler_shutdown(void)
{
    __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < ncores && !main_thread_mode; i++) {
        pthread_mutex_lock(&cores[i].lock);
        pthread_cond_signal(&cores[i].wake);
        pthread_mutex_unlock(&cores[i].lock);
        pthread_join(cores[i].thread, NULL);
    }
}

ActorBase *scheduler_spawn_actor(int preferred_core, void (*step)(void *), size_t actor_size)
{
    ActorBase *actor = calloc(1, actor_size < sizeof *actor ? sizeof *actor : actor_size);
    if (!actor)
        return NULL;
    actor->active = 1;
    STEP(actor) = step;
    if (scheduler_register_actor(actor, preferred_core) < 0) {
        free(actor);
        return NULL;
    }
    return actor;
}

int scheduler_register_actor(ActorBase *actor, int preferred_core)
{
    int core =
        preferred_core >= 0 ? preferred_core : __atomic_fetch_add(&next_core, 1, __ATOMIC_RELAXED);
    actor->id = __atomic_add_fetch(&next_actor_id, 1, __ATOMIC_RELAXED);
    actor->assigned_core = core % ncores;
    __atomic_add_fetch(&registered, 1, __ATOMIC_RELAXED);
    count(N_REGISTER);
    return 0;
}

/* After the actor's last message: the program releases actors once scheduler_wait returned. */
void scheduler_release_actor(ActorBase *actor)
{
    count(N_RELEASE);
    actor->dead = 1;
    free(actor);
}

/* ---- Sends ---- */

void scheduler_send_local(ActorBase *actor, Message msg)
{
    if (!inside_api)
        count(N_LOCAL);
    send_any(actor, msg);
}

void scheduler_send_remote(ActorBase *actor, Message msg, int from_core)
{
    (void)from_core;
    if (!inside_api)
        count(N_REMOTE);
    send_any(actor, msg);
}

/* A Message carrying a copy of a generated message struct, whose first field is its type. */
static Message boxed(const void *data, size_t size)
{
    void *copy = malloc(size);
    if (!copy) {
        fprintf(stderr, "aether stand-in: out of memory\n");
        exit(1);
    }
    memcpy(copy, data, size);
    return (Message){
        .type = *(const int *)data, .payload_ptr = copy, .zerocopy = {copy, (int)size, 1}};
}

/* The runtime's own send: through the exported functions, as the generated code's would be. */
static void send_internal(ActorBase *actor, Message msg)
{
    inside_api = 1;
    if (is_local(actor))
        scheduler_send_local(actor, msg);
    else
        scheduler_send_remote(actor, msg, current_core_id);
    inside_api = 0;
}

void aether_send_message(void *actor_ptr, void *message_data, size_t message_size)
{
    ActorBase *actor = actor_ptr;
    count(is_local(actor) ? N_MESSAGE_LOCAL : N_MESSAGE_REMOTE);
    Message msg = boxed(message_data, message_size);
    if (main_thread_mode) {
        __atomic_add_fetch(&in_flight, 1, __ATOMIC_RELAXED);
        deliver(actor, msg); /* aether_send_message_sync: no send function */
        return;
    }
    send_internal(actor, msg);
}

void scheduler_send_batch_start(void)
{
    batch_len = 0;
    batch_open = 1;
}

void scheduler_send_batch_add(ActorBase *actor, Message msg)
{
    if (!batch_open)
        scheduler_send_batch_start();
    count(is_local(actor) ? N_BATCH_LOCAL : N_BATCH_REMOTE);
    batch[batch_len++] = (struct posted){actor, msg};
    if (batch_len == BATCH_SLOTS)
        scheduler_send_batch_flush();
}

void scheduler_send_batch_flush(void)
{
    for (int i = 0; i < batch_len; i++)
        send_any(batch[i].actor, batch[i].msg);
    batch_len = 0;
    batch_open = 0;
}

/* ---- Ask and reply ---- */

void *scheduler_ask_message(ActorBase *actor, void *msg, size_t size, int timeout_ms)
{
    struct reply_slot *slot = calloc(1, sizeof *slot);
    if (!slot)
        return NULL;
    pthread_mutex_init(&slot->lock, NULL);
    pthread_cond_init(&slot->done_cond, NULL);
    count(is_local(actor) ? N_ASK_LOCAL : N_ASK_REMOTE);
    Message request = boxed(msg, size);
    request._reply_slot = slot;
    send_internal(actor, request);

    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&slot->lock);
    int err = 0;
    while (!slot->done && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&slot->done_cond, &slot->lock, &until);
    void *answer = slot->done ? slot->data : NULL;
    int done = slot->done;
    pthread_mutex_unlock(&slot->lock);
    if (done)
        free(slot); /* else the replier may still write it: left allocated */
    return answer;
}

void scheduler_reply(ActorBase *actor, void *data, size_t size)
{
    (void)actor;
    struct reply_slot *slot = asker;
    void *copy = malloc(size);
    if (!slot || !copy) {
        free(copy);
        return;
    }
    count(N_REPLY);
    memcpy(copy, data, size);
    pthread_mutex_lock(&slot->lock);
    slot->data = copy;
    slot->done = 1;
    pthread_cond_signal(&slot->done_cond);
    pthread_mutex_unlock(&slot->lock);
}

void standin_print_ground_truth(void)
{
    long sends = 0;
    for (int i = N_LOCAL; i <= N_ASK_REMOTE; i++)
        sends += counts[i];
    printf("{\"ground_truth\":{\"send\":%ld", sends);
    for (int i = 0; i < N_COUNTS; i++)
        printf(",\"%s\":%ld", count_names[i], __atomic_load_n(&counts[i], __ATOMIC_RELAXED));
    printf(",\"elapsed_ns\":%ld,\"cpu_ns\":%ld}}\n", elapsed_ns, cpu_ns);
    fflush(stdout);
}
