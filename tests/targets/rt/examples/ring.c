/* ring: a "TOKEN" travels LAPS times round a ring of ACTORS actors "node-1".."node-N", its
 * payload counting the hops; each actor stops after its last visit. Prints the outcome, then
 * the runtime's ground truth. */
#include "args.h"
#include "refrt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
    rt_actor *next;
    long size;  /* actors in the ring */
    long total; /* hops in all: size * laps */
    long last;  /* payload of the last token received */
    long visits;
    long bad; /* tokens that did not come exactly one lap after the previous one */
};

static uint32_t token_type;

/* Node i sees payloads i, i + size, i + 2 * size, ...; node 0 also sees the final one, total,
 * which ends the run. */
static int relay(rt_actor *self, rt_msg *msg, void *state)
{
    struct node *n = state;
    (void)self;
    long p = msg->payload;
    if (msg->type != token_type || (n->visits > 0 && p != n->last + n->size))
        n->bad++;
    n->last = p;
    n->visits++;
    if (p >= n->total)
        return RT_STOP;
    rt_tell(n->next, token_type, p + 1);
    return p + n->size > n->total ? RT_STOP : RT_CONTINUE;
}

/* Spawns the ring and links each node to the next; false when out of memory. */
static bool build_ring(struct node *nodes, rt_actor **actors, long size, long laps)
{
    for (long i = 0; i < size; i++) {
        char name[32];
        snprintf(name, sizeof name, "node-%ld", i + 1);
        nodes[i] = (struct node){.size = size, .total = size * laps};
        if (!(actors[i] = rt_spawn(name, relay, &nodes[i])))
            return false;
    }
    for (long i = 0; i < size; i++)
        nodes[i].next = actors[(i + 1) % size];
    return true;
}

/* Node 0 is visited laps + 1 times, every other node laps times. */
static long misrouted(const struct node *nodes, long size, long laps)
{
    long off = 0;
    for (long i = 0; i < size; i++)
        off += nodes[i].bad + (nodes[i].visits != laps + (i == 0));
    return off;
}

int main(int argc, char **argv)
{
    long size = 16, laps = 500;
    if (argc > 3 || (argc >= 2 && !parse_count(argv[1], 1, 1000000, &size)) ||
        (argc == 3 && !parse_count(argv[2], 1, 1000000000L, &laps))) {
        fprintf(stderr, "usage: ring [ACTORS [LAPS]]   (1..1000000, 1..1000000000; "
                        "default 16 500)\n");
        return 2;
    }
    int err = rt_init(0);
    if (err) {
        fprintf(stderr, "ring: rt_init: %s\n", strerror(-err));
        return 1;
    }
    token_type = rt_msg_type("TOKEN");
    struct node *nodes = calloc(size, sizeof *nodes);
    rt_actor **actors = calloc(size, sizeof *actors);
    if (!nodes || !actors || !build_ring(nodes, actors, size, laps)) {
        fprintf(stderr, "ring: out of memory\n");
        return 1;
    }
    rt_tell(actors[0], token_type, 0);
    rt_wait();
    rt_shutdown();

    printf("ring: %ld actors, %ld laps, %ld hops, final token %ld\n", size, laps, size * laps,
           nodes[0].last);
    rt_print_ground_truth();
    long off = misrouted(nodes, size, laps) + (nodes[0].last != size * laps);
    free(nodes);
    free(actors);
    if (off) {
        fprintf(stderr, "ring: %ld misrouted tokens\n", off);
        return 1;
    }
    return 0;
}
