/* Leaves with _exit() from a signal handler, the standard idiom, at a moment the tracer makes
 * hard: the main thread registers names in a loop (the tracer's metadata lock and malloc are
 * busy) while a background thread records. A timer's SIGALRM handler calls _exit(3) after
 * about 5 ms; the process must end with status 3 whatever the handler interrupted.
 * Usage: exit_in_signal. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>
#include <unistd.h>

int nop_send(int actor, int msg);
/* actortrace.h's API, bound when the tracer is preloaded */
int at_name_msg(uint32_t id, const char *name) __attribute__((weak));

static void on_alarm(int sig)
{
    (void)sig;
    _exit(3);
}

static void *background(void *unused)
{
    (void)unused;
    for (int i = 0;; i++)
        nop_send(2, i);
    return NULL;
}

int main(void)
{
    nop_send(1, 0); /* the first event starts the recorder */
    pthread_t t;
    pthread_create(&t, NULL, background, NULL);
    signal(SIGALRM, on_alarm);
    struct itimerval once = {{0, 0}, {0, 5000}};
    setitimer(ITIMER_REAL, &once, NULL);
    char name[32];
    for (uint32_t i = 0;; i++) {
        snprintf(name, sizeof name, "message type %u", i % 1000);
        if (at_name_msg)
            at_name_msg(i % 1000, name);
    }
}
