/* Threads that each send a few messages and end, many at a time: every event they recorded
 * must reach the trace (each thread's last, partial block is handed over when it exits), and
 * memory must not grow with the number of threads. Usage: thread_churn THREADS SENDS_PER_THREAD
 * The ground truth line also has the process's peak resident memory, "peak_kb". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrt.h"

static rt_actor *sink_actor;
static uint32_t work;
static long sends;

static int sink(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self, (void)msg, (void)state;
    return RT_CONTINUE;
}

static void *sender(void *arg)
{
    for (long i = 0; i < sends; i++)
        rt_tell(sink_actor, work, (intptr_t)arg);
    return NULL;
}

static long peak_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *status = fopen("/proc/self/status", "r");
    while (status && fgets(line, sizeof line, status))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = atol(line + 6);
    if (status)
        fclose(status);
    return kb;
}

int main(int argc, char **argv)
{
    long threads = argc > 1 ? atol(argv[1]) : 1000;
    sends = argc > 2 ? atol(argv[2]) : 3;
    if (threads < 1 || sends < 0 || rt_init(2) < 0)
        return 2;
    work = rt_msg_type("WORK");
    sink_actor = rt_spawn("sink", sink, NULL);
    for (long done = 0; done < threads; done += 8) {
        pthread_t t[8];
        int n = threads - done < 8 ? (int)(threads - done) : 8;
        for (int i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, sender, (void *)(done + i)) != 0)
                return 1;
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
    }
    printf("thread_churn: %ld threads, %ld sends each\n", threads, sends);
    rt_tell(sink_actor, work, -1);
    rt_shutdown();
    rt_print_ground_truth();
    printf("{\"ground_truth\":{\"peak_kb\":%ld}}\n", peak_kb());
    return 0;
}
