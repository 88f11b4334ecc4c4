/* The process's first event comes from a thread that a pending cancellation ends in that very
 * call: a thread cancelled before it runs calls sem_wait (a cancellation point, which the glibc
 * shim records as a park before the wait, ACTORTRACE_GLIBC=1), so the recorder starts on it.
 * The main thread joins it, then posts and waits once itself. Usage: cancel_first */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

static sem_t never, once;
static pthread_barrier_t cancelled;

static void *waiter(void *unused)
{
    (void)unused;
    pthread_barrier_wait(&cancelled); /* the cancellation is pending from here */
    sem_wait(&never);
    return NULL;
}

int main(void)
{
    sem_init(&never, 0, 0);
    sem_init(&once, 0, 0);
    pthread_barrier_init(&cancelled, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    pthread_cancel(t);
    pthread_barrier_wait(&cancelled);
    void *result;
    pthread_join(t, &result);
    sem_post(&once);
    sem_wait(&once);
    printf("joined: %s\n", result == PTHREAD_CANCELED ? "cancelled" : "returned");
    return result == PTHREAD_CANCELED ? 0 : 1;
}
