/* forkjoin WORKERS ROUNDS, on the Aether ABI stand-in: a "joiner" on core 0 sends WORK to every
 * worker in one batch (scheduler_send_batch_start / _add / _flush, as generated code sends in a
 * loop), each worker answers RESULT with a single-int send, and the last RESULT of a round
 * starts the next round. Workers are spread over the two cores. main's START sets the message's
 * sender_id itself. */
#include "aether_abi.h"
#include "program.h"

enum { START, WORK, RESULT }; /* from 0, as Aether numbers message types */
#define MAX_WORKERS 32

typedef struct {
    ActorBase base;
    ActorBase *workers[MAX_WORKERS];
    long nworkers, rounds, round, pending, sum;
} Joiner;

typedef struct {
    ActorBase base;
    ActorBase *joiner;
} Worker;

static void fork_round(Joiner *j)
{
    j->round++;
    j->pending = j->nworkers;
    scheduler_send_batch_start();
    for (long i = 0; i < j->nworkers; i++)
        scheduler_send_batch_add(j->workers[i], (Message){.type = WORK, .payload_int = j->round});
    scheduler_send_batch_flush();
}

static void joiner_step(void *self)
{
    Joiner *j = self;
    Message msg;
    if (!mailbox_receive(&j->base.mailbox, &msg))
        return;
    if (msg.type == RESULT) {
        j->sum += msg.payload_int;
        if (--j->pending > 0)
            return;
    }
    if (j->round < j->rounds)
        fork_round(j);
}

static void worker_step(void *self)
{
    Worker *w = self;
    Message msg;
    if (mailbox_receive(&w->base.mailbox, &msg))
        aether_send_int(w->joiner, RESULT, msg.payload_int);
}

int main(int argc, char **argv)
{
    long nworkers = arg_count(argc, argv, 1, 8, MAX_WORKERS);
    long rounds = arg_count(argc, argv, 2, 1000, 100000000);
    scheduler_init(2);
    Joiner *j = (Joiner *)scheduler_spawn_actor(0, joiner_step, sizeof(Joiner));
    if (!j)
        return 1;
    j->nworkers = nworkers;
    j->rounds = rounds;
    long on_core0 = 0;
    for (long i = 0; i < nworkers; i++) {
        Worker *w = (Worker *)scheduler_spawn_actor(-1, worker_step, sizeof(Worker));
        if (!w)
            return 1;
        w->joiner = &j->base;
        j->workers[i] = &w->base;
        on_core0 += w->base.assigned_core == j->base.assigned_core;
    }
    scheduler_start();
    /* START carries a sender_id of the program's own, as hand-written C may set it */
    scheduler_send_remote(&j->base, (Message){.type = START, .sender_id = 99}, current_core_id);
    scheduler_wait();
    long want = nworkers * rounds * (rounds + 1) / 2;
    printf("forkjoin: %ld workers, %ld rounds, sum %ld (want %ld)\n", nworkers, j->round, j->sum,
           want);
    int ok = j->round == rounds && j->sum == want;
    for (long i = 0; i < nworkers; i++)
        scheduler_release_actor(j->workers[i]);
    scheduler_release_actor(&j->base);
    scheduler_shutdown();
    long local = on_core0 * rounds, remote = (nworkers - on_core0) * rounds;
    print_expected(local, remote + 1, 0, 0, local, remote, 0, 0, nworkers + 1);
    standin_print_ground_truth();
    return ok ? 0 : 1;
}
