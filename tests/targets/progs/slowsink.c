/* A slow consumer on refrt, for the live views (tests/e2e/live.sh): the main thread sends TICK
 * to "producer" every 2 ms for SECONDS seconds; each TICK makes it send WORK to "sink", whose
 * handler takes HANDLER_MS ms (default 10), so the sink's mailbox grows by about 400 messages a
 * second. Then the sink handles the rest at once, and both stop. With FORK set in the
 * environment the program forks first, and parent and child each run the same.
 * Usage: slowsink SECONDS [HANDLER_MS]. Prints the runtime's ground truth. */
#include "refrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint32_t tick_type, work_type, stop_type;
static long handler_ms = 10;
static int hurry; /* set when the sends are over: the sink empties its mailbox at once */

static int sink(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self, (void)state;
    if (msg->type == stop_type)
        return RT_STOP;
    struct timespec slow = {0, handler_ms * 1000000L};
    if (!__atomic_load_n(&hurry, __ATOMIC_ACQUIRE))
        nanosleep(&slow, NULL);
    return RT_CONTINUE;
}

static int producer(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self;
    if (msg->type == stop_type)
        return RT_STOP;
    rt_tell(state, work_type, msg->payload);
    return RT_CONTINUE;
}

static int run(long seconds)
{
    if (rt_init(2) != 0)
        return 1;
    tick_type = rt_msg_type("TICK");
    work_type = rt_msg_type("WORK");
    stop_type = rt_msg_type("STOP");
    rt_actor *to = rt_spawn("sink", sink, NULL);
    rt_actor *from = rt_spawn("producer", producer, to);
    const struct timespec pause = {0, 2000000L};
    for (long i = 1; i <= seconds * 500; i++) {
        rt_tell(from, tick_type, i);
        nanosleep(&pause, NULL);
    }
    __atomic_store_n(&hurry, 1, __ATOMIC_RELEASE);
    rt_tell(from, stop_type, 0);
    rt_tell(to, stop_type, 0);
    rt_wait();
    rt_shutdown();
    rt_print_ground_truth();
    return 0;
}

int main(int argc, char **argv)
{
    long seconds = argc > 1 ? atol(argv[1]) : 0;
    if (argc > 2)
        handler_ms = atol(argv[2]);
    if (argc > 3 || seconds < 1 || seconds > 3600 || handler_ms < 0 || handler_ms > 1000) {
        fprintf(stderr, "usage: slowsink SECONDS [HANDLER_MS]\n");
        return 2;
    }
    pid_t child = getenv("FORK") ? fork() : -1;
    int status = run(seconds);
    if (child > 0) {
        int child_status;
        waitpid(child, &child_status, 0);
        status |= !WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0;
    }
    return status;
}
