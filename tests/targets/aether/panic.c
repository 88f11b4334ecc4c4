/* panic MODE, on the Aether ABI stand-in: an actor's step panics (aether_panic leaves it by a
 * jump), after which main spawns another actor and sends it 5 messages. MODE "main": the
 * panicking actor is the only one at scheduler_start, so the runtime runs every step on the
 * main thread, inside main's send; "worker": a second actor from the start, the steps run on
 * the workers, and the step that panics sends the second actor a message before it does. */
#include "aether_abi.h"
#include "program.h"

#include <string.h>

enum { PANIC = 1, ADD = 2 };

static void counter_step(void *self)
{
    Counter *c = self;
    Message msg;
    if (mailbox_receive(&c->base.mailbox, &msg))
        c->total += msg.payload_int;
}

static Counter *witness; /* receives the panicking step's message */

static void panicking_step(void *self)
{
    Counter *c = self;
    Message msg;
    if (!mailbox_receive(&c->base.mailbox, &msg))
        return;
    if (witness != c)
        aether_send_int(&witness->base, ADD, 1);
    aether_panic("step failed");
}

static Counter *spawn_counter(void (*step)(void *))
{
    Counter *c = (Counter *)scheduler_spawn_actor(-1, step, sizeof(Counter));
    if (!c)
        exit(1);
    return c;
}

int main(int argc, char **argv)
{
    int on_main = argc > 1 && strcmp(argv[1], "main") == 0;
    scheduler_init(2);
    Counter *failing = spawn_counter(panicking_step);
    witness = on_main ? failing : spawn_counter(counter_step);
    scheduler_start();
    aether_send_int(&failing->base, PANIC, 0);
    scheduler_wait();
    Counter *later = spawn_counter(counter_step);
    for (int i = 1; i <= 5; i++)
        aether_send_int(&later->base, ADD, i);
    scheduler_wait();
    printf("panic: the later actor's total %ld (want 15)\n", later->total);
    int ok = later->total == 15;
    scheduler_shutdown();
    standin_print_ground_truth();
    return ok ? 0 : 1;
}
