/* pingpong ROUNDS, on the Aether ABI stand-in: "ping" on core 0 and "pong" on core 1 bounce a
 * counter. PING is a single-int message (scheduler_send_remote, as generated code sends it);
 * PONG a struct sent with aether_send_message. main starts ping with START. */
#include "aether_abi.h"
#include "program.h"

enum { START, PING, PONG }; /* from 0, as Aether numbers message types */

struct pong_msg {
    int type; /* first, as in every generated message struct */
    int seq;
};

typedef struct {
    ActorBase base;
    ActorBase *peer;
    long rounds, last, bad;
} Player;

static void ping_step(void *self)
{
    Player *p = self;
    Message msg;
    if (!mailbox_receive(&p->base.mailbox, &msg))
        return;
    if (msg.type == PONG) {
        const struct pong_msg *m = msg.payload_ptr;
        p->bad += m->seq != p->last + 1;
        p->last = m->seq;
        free(msg.payload_ptr);
    } else if (msg.type != START) {
        p->bad++;
    }
    if (p->last < p->rounds)
        aether_send_int(p->peer, PING, p->last + 1);
}

static void pong_step(void *self)
{
    Player *p = self;
    Message msg;
    if (!mailbox_receive(&p->base.mailbox, &msg))
        return;
    p->bad += msg.type != PING || msg.payload_int != p->last + 1;
    p->last = msg.payload_int;
    struct pong_msg reply = {PONG, (int)msg.payload_int};
    aether_send_message(p->peer, &reply, sizeof reply);
}

int main(int argc, char **argv)
{
    long rounds = arg_count(argc, argv, 1, 10000, 100000000);
    scheduler_init(2);
    Player *ping = (Player *)scheduler_spawn_actor(0, ping_step, sizeof(Player));
    Player *pong = (Player *)scheduler_spawn_actor(1, pong_step, sizeof(Player));
    if (!ping || !pong)
        return 1;
    ping->peer = &pong->base;
    pong->peer = &ping->base;
    ping->rounds = pong->rounds = rounds;
    scheduler_start();
    aether_send_int(&ping->base, START, 0);
    scheduler_wait();
    printf("pingpong: %ld rounds, ping saw %ld, pong saw %ld, %ld out of order\n", rounds,
           ping->last, pong->last, ping->bad + pong->bad);
    int ok = ping->last == rounds && pong->last == rounds && ping->bad + pong->bad == 0;
    scheduler_release_actor(&ping->base);
    scheduler_release_actor(&pong->base);
    scheduler_shutdown();
    print_expected(0, rounds + 1, 0, rounds, 0, 0, 0, 0, 2);
    standin_print_ground_truth();
    return ok ? 0 : 1;
}
