/* Threads whose only events come from signal handlers. MODE "main": a worker sends (so the
 * recorder runs) and signals the main thread COUNT times with SIGUSR1, one at a time; main's
 * handler sends a stop message to actor 2, and main records nothing else. MODE "exiting": a
 * thread sends once, then, in the destructor of a key created after the recorder's (so after
 * the recorder's thread-exit destructor has run), raises SIGUSR1 COUNT times on itself; each
 * handler sends to actor 2.
 * Usage: handler_only MODE COUNT. Prints {"ground_truth":{"send":N,"handler_send":H}}. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int nop_send(int actor, int msg);

static volatile sig_atomic_t handled;
static int count;
static pthread_t main_thread;
static pthread_key_t late_key;

static void on_usr1(int sig)
{
    (void)sig;
    nop_send(2, handled);
    handled++;
}

static void pause_briefly(void)
{
    struct timespec step = {0, 100000};
    nanosleep(&step, NULL);
}

static void *signal_main(void *unused)
{
    (void)unused;
    nop_send(1, 0);
    for (int i = 0; i < count; i++) {
        int before = handled;
        pthread_kill(main_thread, SIGUSR1);
        while (handled == before)
            pause_briefly();
    }
    return NULL;
}

/* Runs after the recorder's thread-exit destructor: its key was created at the first event. */
static void raise_at_exit(void *value)
{
    (void)value;
    for (int i = 0; i < count; i++)
        pthread_kill(pthread_self(), SIGUSR1);
}

static void *send_then_exit(void *unused)
{
    (void)unused;
    nop_send(1, 0);
    pthread_setspecific(late_key, &late_key);
    return NULL;
}

int main(int argc, char **argv)
{
    int exiting = argc > 1 && strcmp(argv[1], "exiting") == 0;
    count = argc > 2 ? atoi(argv[2]) : 100;
    struct sigaction act = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigemptyset(&act.sa_mask);
    sigaction(SIGUSR1, &act, NULL);
    main_thread = pthread_self();
    pthread_t thread;
    if (exiting) {
        nop_send(1, 0); /* starts the recorder, which creates its key */
        pthread_key_create(&late_key, raise_at_exit);
    }
    if (pthread_create(&thread, NULL, exiting ? send_then_exit : signal_main, NULL) != 0)
        return 2;
    pthread_join(thread, NULL);
    printf("{\"ground_truth\":{\"send\":%d,\"handler_send\":%d}}\n", 1 + exiting + handled,
           (int)handled);
    return 0;
}
