/* fanout: a "master" actor spawns WORKERS "worker-N" actors, deals them MESSAGES "WORK"
 * messages round-robin and collects one "DONE" per WORK; then it stops everyone with "STOP".
 * Prints the outcome, then the runtime's ground truth. */
#include "args.h"
#include "refrt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hand {
    rt_actor *master;
    long handled;
    long bad; /* messages of an unexpected type */
};

struct master {
    long nworkers, messages;
    rt_actor **workers;
    struct hand *hands;
    long replies;
    long long checksum; /* sum of DONE payloads: 1 + 2 + ... + MESSAGES */
    long bad;
};

static uint32_t start_type, work_type, done_type, stop_type;

static int worker(rt_actor *self, rt_msg *msg, void *state)
{
    struct hand *h = state;
    (void)self;
    if (msg->type == stop_type)
        return RT_STOP;
    if (msg->type != work_type)
        h->bad++;
    h->handled++;
    rt_tell(h->master, done_type, msg->payload);
    return RT_CONTINUE;
}

/* Spawning here, inside an actor, gives each worker a parent for the tracer to record. */
static bool spawn_workers(struct master *m, rt_actor *self)
{
    for (long i = 0; i < m->nworkers; i++) {
        char name[32];
        snprintf(name, sizeof name, "worker-%ld", i + 1);
        m->hands[i].master = self;
        m->workers[i] = rt_spawn(name, worker, &m->hands[i]);
        if (!m->workers[i])
            return false;
    }
    return true;
}

static int stop_all(struct master *m)
{
    for (long i = 0; i < m->nworkers; i++)
        rt_tell(m->workers[i], stop_type, 0);
    return RT_STOP;
}

static int master(rt_actor *self, rt_msg *msg, void *state)
{
    struct master *m = state;
    if (msg->type == start_type) {
        if (!spawn_workers(m, self)) {
            fprintf(stderr, "fanout: rt_spawn failed\n");
            exit(1);
        }
        for (long i = 0; i < m->messages; i++)
            rt_tell(m->workers[i % m->nworkers], work_type, i + 1);
        return m->messages == 0 ? stop_all(m) : RT_CONTINUE;
    }
    if (msg->type != done_type)
        m->bad++;
    m->checksum += msg->payload;
    return ++m->replies == m->messages ? stop_all(m) : RT_CONTINUE;
}

/* Round-robin dealing gives worker i (from 0) MESSAGES / WORKERS, plus one if i < the rest. */
static long unbalanced(const struct master *m)
{
    long off = m->bad;
    for (long i = 0; i < m->nworkers; i++) {
        long want = m->messages / m->nworkers + (i < m->messages % m->nworkers);
        off += m->hands[i].bad + (m->hands[i].handled != want);
    }
    return off;
}

static void register_types(void)
{
    start_type = rt_msg_type("START");
    work_type = rt_msg_type("WORK");
    done_type = rt_msg_type("DONE");
    stop_type = rt_msg_type("STOP");
}

int main(int argc, char **argv)
{
    struct master m = {.nworkers = 4, .messages = 20000};
    if (argc > 3 || (argc >= 2 && !parse_count(argv[1], 1, 100000, &m.nworkers)) ||
        (argc == 3 && !parse_count(argv[2], 0, 1000000000L, &m.messages))) {
        fprintf(stderr, "usage: fanout [WORKERS [MESSAGES]]   (1..100000, 0..1000000000; "
                        "default 4 20000)\n");
        return 2;
    }
    int err = rt_init(0);
    if (err) {
        fprintf(stderr, "fanout: rt_init: %s\n", strerror(-err));
        return 1;
    }
    register_types();
    m.workers = calloc(m.nworkers, sizeof *m.workers);
    m.hands = calloc(m.nworkers, sizeof *m.hands);
    rt_actor *boss = m.workers && m.hands ? rt_spawn("master", master, &m) : NULL;
    if (!boss) {
        fprintf(stderr, "fanout: out of memory\n");
        return 1;
    }
    rt_tell(boss, start_type, 0);
    rt_wait();
    rt_shutdown();

    printf("fanout: %ld workers, %ld WORK, %ld DONE, checksum %lld\n", m.nworkers, m.messages,
           m.replies, m.checksum);
    rt_print_ground_truth();
    long off = unbalanced(&m);
    free(m.workers);
    free(m.hands);
    if (off || m.checksum != (long long)m.messages * (m.messages + 1) / 2) {
        fprintf(stderr, "fanout: %ld bad or unbalanced counts\n", off);
        return 1;
    }
    return 0;
}
