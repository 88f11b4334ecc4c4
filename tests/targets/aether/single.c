/* single COUNT, on the Aether ABI stand-in: one actor, so the runtime runs it on the main thread
 * (main-thread mode): main sends it COUNT single-int messages (scheduler_send_remote) and COUNT
 * structs (aether_send_message), and each send runs the actor's step inline. */
#include "aether_abi.h"
#include "program.h"

enum { ADD, ADD_PAIR }; /* from 0, as Aether numbers message types */

struct pair_msg {
    int type;
    int a, b;
};

static void counter_step(void *self)
{
    Counter *c = self;
    Message msg;
    if (!mailbox_receive(&c->base.mailbox, &msg))
        return;
    if (msg.type == ADD) {
        c->total += msg.payload_int;
    } else {
        const struct pair_msg *m = msg.payload_ptr;
        c->total += m->a + m->b;
        free(msg.payload_ptr);
    }
}

int main(int argc, char **argv)
{
    long n = arg_count(argc, argv, 1, 1000, 10000000);
    scheduler_init(2);
    Counter *c = (Counter *)scheduler_spawn_actor(0, counter_step, sizeof(Counter));
    if (!c)
        return 1;
    scheduler_start();
    for (long i = 1; i <= n; i++) {
        aether_send_int(&c->base, ADD, i);
        struct pair_msg m = {ADD_PAIR, (int)i, 1};
        aether_send_message(&c->base, &m, sizeof m);
    }
    scheduler_wait();
    long want = n * (n + 1) + n;
    printf("single: %ld sends of each kind, total %ld (want %ld)\n", n, c->total, want);
    int ok = c->total == want;
    scheduler_release_actor(&c->base);
    scheduler_shutdown();
    print_expected(0, n, 0, n, 0, 0, 0, 0, 1);
    standin_print_ground_truth();
    return ok ? 0 : 1;
}
