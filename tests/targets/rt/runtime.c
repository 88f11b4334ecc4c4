/* refrt: the reference actor runtime that actortrace's tests and demo trace. N worker threads
 * serve one mutex-protected run queue; each actor has a mutex-protected FIFO mailbox and an atomic
 * count of pending messages, and every step goes through an exported function that counts calls. */
#include "refrt.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
    BATCH = 8,         /* messages per turn: one busy actor cannot hold a worker for long */
    SPIN_ROUNDS = 256, /* a few microseconds: cheaper than a futex sleep and wake-up */
    MAX_TYPES = 256,
    MAX_WORKERS = 1024,
    DEFAULT_WORKERS = 2,
};

enum { AWAKE, PARKED }; /* a worker's futex word */

struct rt_actor {
    struct rt_actor_head head; /* first: the shim reads the id there */
    char *name;
    rt_behavior behavior;
    void *state;
    /* Messages appended and not yet handled. Going 0 -> 1 schedules the actor and back to 0 makes
     * it idle, so exactly one worker owns it while it is not 0. A sender counts its message only
     * after appending it, so an owner that sees it above 0 always finds a message to receive. */
    _Atomic uint64_t pending;
    pthread_mutex_t lock; /* guards first, last and dead */
    rt_msg *first, *last;
    bool dead;
    rt_actor *run_next;
    rt_actor *all_next; /* actors are freed only at shutdown, so late senders never dangle */
};

struct worker {
    pthread_t thread;
    _Atomic uint32_t futex;
    int id;
};

enum counter { SPAWN, SEND, RECV, STEP, SCHEDULE, PARK, UNPARK, EXIT, NCOUNTERS };

static const char *const counter_names[NCOUNTERS] = {
    "spawn", "send", "recv", "step", "schedule", "park", "unpark", "exit",
};

/* One cache line each: workers bump several per message and would otherwise contend. */
static struct {
    _Alignas(64) _Atomic uint64_t n;
} counters[NCOUNTERS];

static struct {
    pthread_mutex_t lock;
    rt_actor *first, *last;
    _Atomic int queued; /* the length, for spinning workers that poll without the lock */
    int spinning;       /* while one spins, schedulers leave parked workers asleep */
    int *idle;          /* stack of parked worker ids */
    int nidle;
    bool stopping;
} rq = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct worker *workers;
static int nworkers;

static _Atomic uint32_t live; /* actors spawned and not exited; rt_wait sleeps on it */
static _Atomic uint64_t actor_ids = 1, msg_ids = 1;
static __thread rt_actor *current;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_actor *registry;

static pthread_mutex_t types_lock = PTHREAD_MUTEX_INITIALIZER;
static char *types[MAX_TYPES];
static uint32_t ntypes;

static void count(enum counter c)
{
    atomic_fetch_add_explicit(&counters[c].n, 1, memory_order_relaxed);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t expected)
{
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static void free_chain(rt_msg *msg)
{
    while (msg) {
        rt_msg *next = msg->next;
        free(msg);
        msg = next;
    }
}

/* ---- Mailbox ---- */

/* Appends msg unless the actor has exited; false leaves msg with the caller. */
static bool mailbox_put(rt_actor *actor, rt_msg *msg)
{
    pthread_mutex_lock(&actor->lock);
    bool open = !actor->dead;
    if (open) {
        msg->next = NULL;
        if (actor->last)
            actor->last->next = msg;
        else
            actor->first = msg;
        actor->last = msg;
    }
    pthread_mutex_unlock(&actor->lock);
    return open;
}

/* ---- Run queue (callers hold rq.lock) ---- */

static rt_actor *rq_pop(void)
{
    rt_actor *actor = rq.first;
    if (actor) {
        rq.first = actor->run_next;
        if (!rq.first)
            rq.last = NULL;
        atomic_store_explicit(&rq.queued,
                              atomic_load_explicit(&rq.queued, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    }
    return actor;
}

/* A parked worker to wake for queued work, or 0: none when a spinner will take it anyway. */
static int wake_candidate(void)
{
    if (!rq.first || rq.spinning > 0 || rq.nidle == 0)
        return 0;
    return rq.idle[--rq.nidle];
}

/* ---- Workers ---- */

static struct worker *worker_at(int id)
{
    return id >= 1 && id <= nworkers ? &workers[id - 1] : NULL;
}

/* Polls the queue length for a while with rq.lock released; returns with it held again. */
static void spin_locked(void)
{
    rq.spinning++;
    pthread_mutex_unlock(&rq.lock);
    for (int i = 0; i < SPIN_ROUNDS && !atomic_load_explicit(&rq.queued, memory_order_relaxed); i++)
        cpu_relax();
    pthread_mutex_lock(&rq.lock);
    rq.spinning--;
}

/* Announcing idle under rq.lock closes the lost-wakeup window: a push made before it, the
 * caller saw in rq_pop; one made after it finds us on the idle stack and unparks us. */
static void park_locked(struct worker *w)
{
    atomic_store_explicit(&w->futex, PARKED, memory_order_relaxed);
    rq.idle[rq.nidle++] = w->id;
    pthread_mutex_unlock(&rq.lock);
    rt_park(w->id);
    pthread_mutex_lock(&rq.lock);
}

/* The next actor for w: from the queue, else after a spin, else after parking. NULL when the
 * runtime stops. */
static rt_actor *next_actor(struct worker *w)
{
    rt_actor *actor = NULL;
    pthread_mutex_lock(&rq.lock);
    for (bool spun = false; !rq.stopping; spun = !spun) {
        if ((actor = rq_pop()))
            break;
        if (spun)
            park_locked(w);
        else
            spin_locked();
    }
    /* Work left behind us gets a parked worker: while we spun, schedulers let them sleep. */
    int wake = actor ? wake_candidate() : 0;
    pthread_mutex_unlock(&rq.lock);
    if (wake)
        rt_unpark(wake);
    return actor;
}

/* One turn: the worker owns the actor and it has mail. Once pending drops to 0 the actor may
 * already be another worker's, so it is not touched again. An exited actor keeps its pending
 * count above 0, which keeps late senders from scheduling it. */
static void run_turn(rt_actor *actor)
{
    for (int i = 0; i < BATCH; i++) {
        rt_msg *msg = rt_receive(actor);
        if (rt_step(actor, msg) == RT_STOP) {
            rt_exit(actor);
            return;
        }
        if (atomic_fetch_sub(&actor->pending, 1) == 1)
            return;
    }
    rt_schedule(actor);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "refrt-w%d", w->id);
    pthread_setname_np(pthread_self(), name);
    for (rt_actor *actor; (actor = next_actor(w));)
        run_turn(actor);
    return NULL;
}

static int env_workers(void)
{
    const char *s = getenv("RT_WORKERS");
    char *end;
    long n = s ? strtol(s, &end, 10) : 0;
    return s && end != s && !*end && n >= 1 && n <= MAX_WORKERS ? (int)n : DEFAULT_WORKERS;
}

/* Stops and joins the first `started` workers, waking each parked one. */
static void stop_workers(int started)
{
    pthread_mutex_lock(&rq.lock);
    rq.stopping = true;
    while (rq.nidle > 0) {
        int id = rq.idle[--rq.nidle];
        pthread_mutex_unlock(&rq.lock);
        rt_unpark(id);
        pthread_mutex_lock(&rq.lock);
    }
    pthread_mutex_unlock(&rq.lock);
    for (int i = 0; i < started; i++)
        pthread_join(workers[i].thread, NULL);
    pthread_mutex_lock(&rq.lock);
    free(workers);
    free(rq.idle);
    workers = NULL;
    rq.idle = NULL;
    nworkers = 0;
    pthread_mutex_unlock(&rq.lock);
}

/* Sets up the worker table and idle stack, with rq.lock held. */
static int alloc_workers(int n)
{
    workers = calloc(n, sizeof *workers);
    rq.idle = calloc(n, sizeof *rq.idle);
    if (!workers || !rq.idle) {
        free(workers);
        free(rq.idle);
        workers = NULL;
        rq.idle = NULL;
        return ENOMEM;
    }
    for (int i = 0; i < n; i++)
        workers[i].id = i + 1;
    nworkers = n;
    rq.stopping = false;
    return 0;
}

/* ---- The program's API ---- */

int rt_init(int n)
{
    if (n <= 0)
        n = env_workers();
    if (n > MAX_WORKERS)
        return -EINVAL;
    pthread_mutex_lock(&rq.lock);
    int err = nworkers ? EBUSY : alloc_workers(n);
    pthread_mutex_unlock(&rq.lock);
    for (int i = 0; !err && i < n; i++) {
        err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
        if (err)
            stop_workers(i);
    }
    return -err;
}

uint32_t rt_msg_type(const char *name)
{
    uint32_t id = 0;
    if (!name)
        return 0;
    pthread_mutex_lock(&types_lock);
    for (uint32_t i = 0; i < ntypes && !id; i++)
        if (strcmp(types[i], name) == 0)
            id = i + 1;
    if (!id && ntypes < MAX_TYPES && (types[ntypes] = strdup(name)))
        id = ++ntypes;
    pthread_mutex_unlock(&types_lock);
    return id;
}

rt_actor *rt_spawn(const char *name, rt_behavior behavior, void *state)
{
    count(SPAWN);
    rt_actor *actor = behavior ? calloc(1, sizeof *actor) : NULL;
    char *copy = actor ? strdup(name ? name : "") : NULL;
    if (!copy) {
        free(actor);
        return NULL;
    }
    actor->head.id = atomic_fetch_add_explicit(&actor_ids, 1, memory_order_relaxed);
    actor->name = copy;
    actor->behavior = behavior;
    actor->state = state;
    atomic_init(&actor->pending, 0);
    pthread_mutex_init(&actor->lock, NULL);
    pthread_mutex_lock(&registry_lock);
    actor->all_next = registry;
    registry = actor;
    pthread_mutex_unlock(&registry_lock);
    atomic_fetch_add(&live, 1);
    return actor;
}

rt_msg *rt_msg_new(uint32_t type, intptr_t payload)
{
    rt_msg *msg = malloc(sizeof *msg);
    if (msg)
        *msg = (rt_msg){
            .id = atomic_fetch_add_explicit(&msg_ids, 1, memory_order_relaxed),
            .sender = current ? current->head.id : 0,
            .type = type,
            .payload = payload,
        };
    return msg;
}

void rt_send(rt_actor *to, rt_msg *msg)
{
    count(SEND);
    if (!msg)
        return;
    /* The message may have been made on another thread; the sender is whoever sends it. */
    msg->sender = current ? current->head.id : 0;
    if (!to || !mailbox_put(to, msg)) {
        free(msg);
        return;
    }
    if (atomic_fetch_add(&to->pending, 1) == 0)
        rt_schedule(to);
}

void rt_tell(rt_actor *to, uint32_t type, intptr_t payload)
{
    rt_msg *msg = rt_msg_new(type, payload);
    if (msg)
        rt_send(to, msg);
}

uint64_t rt_actor_id(const rt_actor *actor)
{
    return actor ? actor->head.id : 0;
}

rt_actor *rt_self(void)
{
    return current;
}

void rt_wait(void)
{
    for (uint32_t n; (n = atomic_load(&live)) != 0;)
        futex_wait(&live, n);
}

/* Frees every actor and what its mailbox still holds; the run queue only pointed at them. */
static void free_actors(void)
{
    pthread_mutex_lock(&registry_lock);
    rt_actor *actor = registry;
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
    while (actor) {
        rt_actor *next = actor->all_next;
        free_chain(actor->first);
        pthread_mutex_destroy(&actor->lock);
        free(actor->name);
        free(actor);
        actor = next;
    }
    pthread_mutex_lock(&rq.lock);
    rq.first = rq.last = NULL;
    atomic_store_explicit(&rq.queued, 0, memory_order_relaxed);
    pthread_mutex_unlock(&rq.lock);
    atomic_store(&live, 0);
}

static void free_types(void)
{
    pthread_mutex_lock(&types_lock);
    for (uint32_t i = 0; i < ntypes; i++)
        free(types[i]);
    ntypes = 0;
    pthread_mutex_unlock(&types_lock);
}

void rt_shutdown(void)
{
    pthread_mutex_lock(&rq.lock);
    int started = nworkers;
    pthread_mutex_unlock(&rq.lock);
    if (started)
        stop_workers(started);
    free_actors();
    free_types();
}

void rt_print_ground_truth(void)
{
    printf("{\"ground_truth\":{");
    for (int i = 0; i < NCOUNTERS; i++)
        printf("%s\"%s\":%" PRIu64, i ? "," : "", counter_names[i],
               atomic_load_explicit(&counters[i].n, memory_order_relaxed));
    printf("}}\n");
    fflush(stdout);
}

/* ---- The runtime's internal steps ---- */

void rt_schedule(rt_actor *actor)
{
    count(SCHEDULE);
    pthread_mutex_lock(&rq.lock);
    actor->run_next = NULL;
    if (rq.last)
        rq.last->run_next = actor;
    else
        rq.first = actor;
    rq.last = actor;
    atomic_store_explicit(&rq.queued, atomic_load_explicit(&rq.queued, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    int wake = wake_candidate();
    pthread_mutex_unlock(&rq.lock);
    if (wake)
        rt_unpark(wake);
}

rt_msg *rt_receive(rt_actor *actor)
{
    pthread_mutex_lock(&actor->lock);
    rt_msg *msg = actor->first;
    if (msg) {
        actor->first = msg->next;
        if (!actor->first)
            actor->last = NULL;
        msg->next = NULL;
    }
    pthread_mutex_unlock(&actor->lock);
    if (msg)
        count(RECV);
    return msg;
}

int rt_step(rt_actor *actor, rt_msg *msg)
{
    count(STEP);
    rt_actor *outer = current;
    current = actor;
    int result = actor->behavior(actor, msg, actor->state);
    current = outer;
    free(msg);
    return result == RT_STOP ? RT_STOP : RT_CONTINUE;
}

void rt_park(int worker)
{
    count(PARK);
    struct worker *w = worker_at(worker);
    while (w && atomic_load_explicit(&w->futex, memory_order_acquire) == PARKED)
        futex_wait(&w->futex, PARKED);
}

void rt_unpark(int worker)
{
    count(UNPARK);
    struct worker *w = worker_at(worker);
    if (!w)
        return;
    atomic_store_explicit(&w->futex, AWAKE, memory_order_release);
    futex_wake(&w->futex, 1);
}

void rt_exit(rt_actor *actor)
{
    count(EXIT);
    pthread_mutex_lock(&actor->lock);
    bool was_dead = actor->dead;
    rt_msg *dropped = actor->first;
    actor->dead = true;
    actor->first = actor->last = NULL;
    pthread_mutex_unlock(&actor->lock);
    free_chain(dropped);
    if (!was_dead && atomic_fetch_sub(&live, 1) == 1)
        futex_wake(&live, INT_MAX);
}
