/* Ends the process at the very start of tracing. A second thread records the first event,
 * which starts the recorder; meanwhile the main thread, after DELAY_US microseconds, ends the
 * process by HOW: "exit" (exit(0)), "term" (SIGTERM to itself, left at its default action) or
 * "none" (it joins the thread and returns: one event, for measuring the cost of start-up).
 * Usage: early_end HOW DELAY_US */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static volatile int recording;

static void *first_event(void *unused)
{
    (void)unused;
    recording = 1;
    nop_send(1, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    pthread_t t;
    pthread_create(&t, NULL, first_event, NULL);
    if (strcmp(argv[1], "none") == 0)
        return pthread_join(t, NULL);
    while (!recording)
        ;
    usleep((useconds_t)atoi(argv[2]));
    if (strcmp(argv[1], "term") == 0) {
        signal(SIGTERM, SIG_DFL); /* whatever it inherited: this run ends of SIGTERM */
        kill(getpid(), SIGTERM);
    }
    exit(0);
}
