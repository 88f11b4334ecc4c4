/* pingpong: actors "ping" and "pong" bounce a counter ROUNDS times, the smallest program with a
 * send, a wake-up and a step on each side. Prints the outcome, then the runtime's ground truth. */
#include "args.h"
#include "refrt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct player {
    rt_actor *peer;
    long rounds;
    long last; /* payload of the last PING or PONG received */
    long bad;  /* messages out of order, of the wrong type or from the wrong sender */
};

static uint32_t start_type, ping_type, pong_type;

/* Each side expects the counter to grow by one per message, from its peer. */
static void check(struct player *p, const rt_msg *msg, uint32_t type)
{
    if (msg->type != type || msg->payload != p->last + 1 || msg->sender != rt_actor_id(p->peer))
        p->bad++;
    p->last = msg->payload;
}

static int ping(rt_actor *self, rt_msg *msg, void *state)
{
    struct player *p = state;
    (void)self;
    if (msg->type == start_type) {
        rt_tell(p->peer, ping_type, 1);
        return RT_CONTINUE;
    }
    check(p, msg, pong_type);
    if (p->last >= p->rounds)
        return RT_STOP;
    rt_tell(p->peer, ping_type, p->last + 1);
    return RT_CONTINUE;
}

static int pong(rt_actor *self, rt_msg *msg, void *state)
{
    struct player *p = state;
    (void)self;
    check(p, msg, ping_type);
    rt_tell(p->peer, pong_type, msg->payload);
    return p->last >= p->rounds ? RT_STOP : RT_CONTINUE;
}

int main(int argc, char **argv)
{
    long rounds = 10000;
    if (argc > 2 || (argc == 2 && !parse_count(argv[1], 1, 1000000000L, &rounds))) {
        fprintf(stderr, "usage: pingpong [ROUNDS]   (1..1000000000, default 10000)\n");
        return 2;
    }
    int err = rt_init(0);
    if (err) {
        fprintf(stderr, "pingpong: rt_init: %s\n", strerror(-err));
        return 1;
    }
    start_type = rt_msg_type("START");
    ping_type = rt_msg_type("PING");
    pong_type = rt_msg_type("PONG");
    struct player ping_state = {.rounds = rounds}, pong_state = {.rounds = rounds};
    rt_actor *pinger = rt_spawn("ping", ping, &ping_state);
    rt_actor *ponger = rt_spawn("pong", pong, &pong_state);
    if (!pinger || !ponger) {
        fprintf(stderr, "pingpong: rt_spawn failed\n");
        return 1;
    }
    ping_state.peer = ponger;
    pong_state.peer = pinger;
    rt_tell(pinger, start_type, 0);
    rt_wait();
    rt_shutdown();

    printf("pingpong: %ld rounds, last payload %ld\n", rounds, ping_state.last);
    rt_print_ground_truth();
    if (ping_state.bad || pong_state.bad || ping_state.last != rounds) {
        fprintf(stderr, "pingpong: %ld bad messages\n", ping_state.bad + pong_state.bad);
        return 1;
    }
    return 0;
}
