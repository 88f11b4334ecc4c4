/* mbox, the runtime of mbox.h: one thread per actor, a mutex-and-condvar mailbox each, and a
 * log of every operation, kept under one lock (the runtime is for tests, not for speed). */
#include "mbox.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mb_actor {
    struct mb_actor_head head;
    mb_body body;
    void *arg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct mb_msg *first, *last;
    struct mb_actor *next_spawned;
    int joined; /* under log_lock */
};

struct entry {
    const char *event;
    uint64_t actor, peer, msg;
    const char *msg_name;
};

static const char *const type_names[] = {
    [MB_PING] = "ping", [MB_PONG] = "pong", [MB_STOP] = "stop", [MB_NAMED] = "named"};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *log_entries;
static size_t log_count, log_size;
static mb_actor *spawned; /* every actor, newest first, under log_lock */
static uint64_t next_actor_id, next_msg_id;
static __thread mb_actor *current;

static void log_op(const char *event, uint64_t actor, uint64_t peer, uint64_t msg,
                   const char *msg_name)
{
    pthread_mutex_lock(&log_lock);
    if (log_count == log_size) {
        log_size = log_size ? 2 * log_size : 1024;
        log_entries = realloc(log_entries, log_size * sizeof *log_entries);
        if (!log_entries)
            abort();
    }
    log_entries[log_count++] = (struct entry){event, actor, peer, msg, msg_name};
    pthread_mutex_unlock(&log_lock);
}

uint64_t mb_id(const mb_actor *actor)
{
    return actor ? actor->head.id : 0;
}

mb_actor *mb_self(void)
{
    return current;
}

static void *actor_thread(void *p)
{
    mb_actor *self = p;
    current = self;
    log_op("step_begin", self->head.id, 0, 0, NULL);
    self->body(self, self->arg);
    log_op("step_end", self->head.id, 0, 0, NULL);
    mb_exit(self);
    return NULL;
}

mb_actor *mb_spawn(const char *name, mb_body body, void *arg)
{
    mb_actor *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    snprintf(a->head.name, sizeof a->head.name, "%s", name);
    a->head.id = __atomic_add_fetch(&next_actor_id, 1, __ATOMIC_RELAXED);
    a->body = body;
    a->arg = arg;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->ready, NULL);
    /* logged before the thread starts, so its own operations come after */
    log_op("spawn", a->head.id, mb_id(current), 0, NULL);
    pthread_t thread;
    if (pthread_create(&thread, NULL, actor_thread, a) != 0)
        abort();
    /* listed only once its thread id is known: mb_join may pick it up at once */
    pthread_mutex_lock(&log_lock);
    a->thread = thread;
    a->next_spawned = spawned;
    spawned = a;
    pthread_mutex_unlock(&log_lock);
    return a;
}

struct mb_msg *mb_msg_new(uint32_t type, intptr_t payload)
{
    struct mb_msg *m = calloc(1, sizeof *m);
    if (!m)
        abort();
    m->id = __atomic_add_fetch(&next_msg_id, 1, __ATOMIC_RELAXED);
    m->type = type;
    m->name = type < sizeof type_names / sizeof type_names[0] ? type_names[type] : NULL;
    m->payload = payload;
    return m;
}

void mb_post(const struct mb_envelope *env)
{
    mb_actor *to = env->to;
    struct mb_msg *m = env->msg;
    m->from = current;
    m->sender = mb_id(current);
    log_op("send", to->head.id, m->sender, m->id, m->name);
    pthread_mutex_lock(&to->lock);
    if (to->last)
        to->last->next = m;
    else
        to->first = m;
    to->last = m;
    pthread_cond_signal(&to->ready);
    pthread_mutex_unlock(&to->lock);
}

uint64_t mb_send_named(mb_actor *to, const char *name, intptr_t payload)
{
    struct mb_msg *m = mb_msg_new(MB_NAMED, payload);
    m->name = name;
    uint64_t id = m->id;
    mb_post(&(struct mb_envelope){.to = to, .msg = m});
    return id;
}

uint64_t mb_stop(mb_actor *to)
{
    struct mb_msg *m = mb_msg_new(MB_STOP, 0);
    uint64_t id = m->id;
    mb_post(&(struct mb_envelope){.to = to, .msg = m});
    return id;
}

struct mb_msg *mb_receive(mb_actor *self)
{
    pthread_mutex_lock(&self->lock);
    while (!self->first)
        pthread_cond_wait(&self->ready, &self->lock);
    struct mb_msg *m = self->first;
    self->first = m->next;
    if (!self->first)
        self->last = NULL;
    pthread_mutex_unlock(&self->lock);
    m->next = NULL;
    log_op("recv", self->head.id, m->sender, m->id, m->name);
    return m;
}

void mb_free(struct mb_msg *msg)
{
    log_op("free", mb_id(current), 0, msg->id, NULL);
    free(msg);
}

void mb_exit(mb_actor *self)
{
    log_op("exit", self->head.id, 0, 0, NULL);
}

void mb_join(void)
{
    for (;;) {
        pthread_mutex_lock(&log_lock);
        mb_actor *a = spawned;
        while (a && a->joined)
            a = a->next_spawned;
        if (a)
            a->joined = 1;
        pthread_mutex_unlock(&log_lock);
        if (!a)
            return;
        pthread_join(a->thread, NULL);
    }
}

void mb_print_ground_truth(void)
{
    static const char *const kinds[] = {"spawn",    "send", "recv", "step_begin",
                                        "step_end", "exit", "free"};
    size_t counts[7] = {0};
    pthread_mutex_lock(&log_lock);
    for (size_t i = 0; i < log_count; i++) {
        const struct entry *e = &log_entries[i];
        printf("{\"truth\":{\"event\":\"%s\",\"actor\":%llu,\"peer\":%llu,\"msg\":%llu,"
               "\"msg_name\":\"%s\"}}\n",
               e->event, (unsigned long long)e->actor, (unsigned long long)e->peer,
               (unsigned long long)e->msg, e->msg_name ? e->msg_name : "");
        for (size_t k = 0; k < 7; k++)
            counts[k] += strcmp(e->event, kinds[k]) == 0;
    }
    pthread_mutex_unlock(&log_lock);
    printf("{\"ground_truth\":{");
    for (size_t k = 0; k < 7; k++)
        printf("%s\"%s\":%zu", k ? "," : "", kinds[k], counts[k]);
    printf("}}\n");
}
