/* The program shimgen's test traces on mbox: "pinger" and "ponger" bounce PING and PONG
 * ROUNDS times through envelopes; "ponger" spawns "helper" from inside its body and relays
 * the named message "hello" (sent from main, outside any actor) to it as "relay"; "bye" and
 * the stop messages end them. Prints the runtime's log and counts (mbox.h). */
#include "mbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rounds = 1000;

static void post(mb_actor *to, uint32_t type, intptr_t payload)
{
    mb_post(&(struct mb_envelope){.to = to, .msg = mb_msg_new(type, payload)});
}

/* Takes messages until MB_STOP. */
static void helper(mb_actor *self, void *arg)
{
    (void)arg;
    for (;;) {
        struct mb_msg *m = mb_receive(self);
        int stop = m->type == MB_STOP;
        mb_free(m);
        if (stop)
            return;
    }
}

static void ponger(mb_actor *self, void *arg)
{
    (void)arg;
    mb_actor *child = mb_spawn("helper", helper, NULL);
    for (;;) {
        struct mb_msg *m = mb_receive(self);
        uint32_t type = m->type;
        if (type == MB_PING)
            post(m->from, MB_PONG, m->payload);
        else if (type == MB_NAMED && strcmp(m->name, "hello") == 0)
            mb_send_named(child, "relay", m->payload);
        mb_free(m);
        if (type == MB_STOP)
            break;
    }
    mb_stop(child);
}

static void pinger(mb_actor *self, void *arg)
{
    mb_actor *peer = arg;
    for (long i = 1; i <= rounds; i++) {
        post(peer, MB_PING, i);
        struct mb_msg *m = mb_receive(self);
        if (m->type != MB_PONG || m->payload != i)
            fprintf(stderr, "mbox_demo: round %ld: wrong reply\n", i);
        mb_free(m);
    }
    mb_send_named(peer, "bye", 0);
    mb_stop(peer);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = strtol(argv[1], NULL, 10);
    if (argc > 2 || rounds < 1) {
        fprintf(stderr, "usage: mbox_demo [ROUNDS]\n");
        return 2;
    }
    mb_actor *pong = mb_spawn("ponger", ponger, NULL);
    mb_send_named(pong, "hello", 42);
    mb_spawn("pinger", pinger, pong);
    mb_join();
    mb_print_ground_truth();
    return 0;
}
