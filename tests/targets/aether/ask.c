/* ask QUESTIONS, on the Aether ABI stand-in: main asks two "adder" actors (one per core), in
 * turn, to add two numbers (scheduler_ask_message); each answers with scheduler_reply from its
 * step. */
#include "aether_abi.h"
#include "program.h"

enum { ADD, ANSWER }; /* from 0, as Aether numbers message types */

struct add_msg {
    int type;
    int a, b;
};

struct answer_msg {
    int type;
    int sum;
};

static void adder_step(void *self)
{
    ActorBase *base = self;
    Message msg;
    if (!mailbox_receive(&base->mailbox, &msg))
        return;
    const struct add_msg *m = msg.payload_ptr;
    struct answer_msg answer = {ANSWER, m->a + m->b};
    free(msg.payload_ptr);
    scheduler_reply(base, &answer, sizeof answer);
}

int main(int argc, char **argv)
{
    long questions = arg_count(argc, argv, 1, 1000, 10000000);
    scheduler_init(2);
    ActorBase *adders[2] = {scheduler_spawn_actor(0, adder_step, sizeof(ActorBase)),
                            scheduler_spawn_actor(1, adder_step, sizeof(ActorBase))};
    if (!adders[0] || !adders[1])
        return 1;
    scheduler_start();
    long wrong = 0;
    for (long i = 0; i < questions; i++) {
        struct add_msg q = {ADD, (int)i, (int)i};
        struct answer_msg *a = scheduler_ask_message(adders[i % 2], &q, sizeof q, 10000);
        wrong += !a || a->type != ANSWER || a->sum != 2 * (int)i;
        free(a);
    }
    scheduler_wait();
    printf("ask: %ld questions, %ld wrong answers\n", questions, wrong);
    scheduler_release_actor(adders[0]);
    scheduler_release_actor(adders[1]);
    scheduler_shutdown();
    print_expected(0, 0, 0, 0, 0, 0, questions, questions, 2);
    standin_print_ground_truth();
    return wrong == 0 ? 0 : 1;
}
