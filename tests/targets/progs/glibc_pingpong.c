/* Two threads take turns ROUNDS times through each of glibc's waiting primitives: a pthread
 * condition variable, two semaphores, a futex word (syscall(SYS_futex)), a C11 condition
 * variable, and a condition variable of the old GLIBC_2.2.5 ABI, which the tracer must leave
 * alone. Counts every wait call and every wake-up call it makes (how many waits a run needs
 * depends on scheduling); the last line is {"ground_truth":{...}} for tests/e2e/glibc.sh.
 * Usage: glibc_pingpong ROUNDS */
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <threads.h>
#include <unistd.h>

/* The GLIBC_2.2.5 condvar functions, kept for binaries older than the condvar rewrite: their
 * object's first word points to a condvar they allocate on first use. */
int old_cond_wait(void *cond, pthread_mutex_t *mutex);
int old_cond_signal(void *cond);
__asm__(".symver old_cond_wait, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver old_cond_signal, pthread_cond_signal@GLIBC_2.2.5");

enum primitive { COND, SEM, FUTEX, CND, OLD, PRIMITIVES };
static const char *const names[PRIMITIVES] = {"cond", "sem", "futex", "cnd", "old"};

static long rounds;
static atomic_long waits[PRIMITIVES], wakes[PRIMITIVES];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static void *old_cond[8];
static int turn; /* whose turn it is, under lock (cond, old) or cnd_lock (cnd) */
static sem_t sems[2];
static _Atomic uint32_t futex_turn;
static mtx_t cnd_lock;
static cnd_t c11_cond;

static void cond_turn(int me, int old)
{
    pthread_mutex_lock(&lock);
    while (turn != me) {
        waits[old ? OLD : COND]++;
        old ? old_cond_wait(old_cond, &lock) : pthread_cond_wait(&cond, &lock);
    }
    turn = 1 - me;
    wakes[old ? OLD : COND]++;
    old ? old_cond_signal(old_cond) : pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
}

static void sem_turn(int me)
{
    waits[SEM]++;
    sem_wait(&sems[me]);
    wakes[SEM]++;
    sem_post(&sems[1 - me]);
}

static void futex_turn_(int me)
{
    uint32_t now;
    while ((now = atomic_load(&futex_turn)) != (uint32_t)me) {
        waits[FUTEX]++;
        syscall(SYS_futex, &futex_turn, FUTEX_WAIT_PRIVATE, now, NULL, NULL, 0);
    }
    atomic_store(&futex_turn, (uint32_t)(1 - me));
    wakes[FUTEX]++;
    syscall(SYS_futex, &futex_turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void cnd_turn(int me)
{
    mtx_lock(&cnd_lock);
    while (turn != me) {
        waits[CND]++;
        cnd_wait(&c11_cond, &cnd_lock);
    }
    turn = 1 - me;
    wakes[CND]++;
    cnd_signal(&c11_cond);
    mtx_unlock(&cnd_lock);
}

struct player {
    enum primitive primitive;
    int me;
};

static void *play(void *arg)
{
    const struct player *p = arg;
    for (long i = 0; i < rounds; i++) {
        switch (p->primitive) {
        case COND:
        case OLD:
            cond_turn(p->me, p->primitive == OLD);
            break;
        case SEM:
            sem_turn(p->me);
            break;
        case FUTEX:
            futex_turn_(p->me);
            break;
        default:
            cnd_turn(p->me);
            break;
        }
    }
    return NULL;
}

static int run(enum primitive primitive)
{
    pthread_t threads[2];
    struct player players[2] = {{primitive, 0}, {primitive, 1}};
    turn = 0;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&threads[i], NULL, play, &players[i]) != 0)
            return -1;
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    printf("%s: %ld rounds\n", names[primitive], rounds);
    return 0;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 0;
    if (rounds < 1) {
        fprintf(stderr, "usage: glibc_pingpong ROUNDS\n");
        return 2;
    }
    sem_init(&sems[0], 0, 1);
    sem_init(&sems[1], 0, 0);
    mtx_init(&cnd_lock, mtx_plain);
    cnd_init(&c11_cond);
    for (enum primitive p = 0; p < PRIMITIVES; p++)
        if (run(p) != 0)
            return 1;
    printf("old ABI condvar went through glibc's compat code: %s\n", old_cond[0] ? "yes" : "no");
    printf("{\"ground_truth\":{");
    for (enum primitive p = 0; p < PRIMITIVES; p++)
        printf("%s\"%s\":{\"waits\":%ld,\"wakes\":%ld}", p ? "," : "", names[p], (long)waits[p],
               (long)wakes[p]);
    printf("}}\n");
    return 0;
}
