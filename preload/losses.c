/* Overwrite mode's losses: one entry per thread whose blocks were taken back, until the writer
 * turns them into LOST records (meta.c, before a dump and at the end). One record per block
 * taken back would make the metadata grow with the length of the run. The ring file counts the
 * same events (at__ring_steal_oldest), for recovery after a kill. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "losses.h"

static struct at_lost overwritten[AT_OVERWRITTEN_THREADS]; /* guarded by lock */
static unsigned overwritten_count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int at__losses_note(const struct at_lost *lost)
{
    pthread_mutex_lock(&lock);
    unsigned i = 0;
    while (i < overwritten_count && overwritten[i].tid != lost->tid)
        i++;
    int err = 0;
    if (i == AT_OVERWRITTEN_THREADS) {
        err = -ENOSPC;
    } else if (i == overwritten_count) {
        overwritten[i] = *lost;
        overwritten_count++;
    } else {
        struct at_lost *entry = &overwritten[i];
        entry->count += lost->count;
        if (lost->first_tsc < entry->first_tsc)
            entry->first_tsc = lost->first_tsc;
        if (lost->last_tsc > entry->last_tsc)
            entry->last_tsc = lost->last_tsc;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

unsigned at__losses_take(struct at_lost *out, unsigned max, uint64_t timeout_ns)
{
    struct timespec until = at__monotonic_after(timeout_ns);
    if (timeout_ns == AT_WAIT_FOREVER)
        pthread_mutex_lock(&lock);
    else if (pthread_mutex_clocklock(&lock, CLOCK_MONOTONIC, &until) != 0)
        return 0;
    unsigned n = overwritten_count < max ? overwritten_count : max;
    memcpy(out, overwritten, n * sizeof *out);
    /* what did not fit stays, first in the table */
    memmove(overwritten, overwritten + n, (overwritten_count - n) * sizeof *out);
    overwritten_count -= n;
    pthread_mutex_unlock(&lock);
    return n;
}

/* In a forked child: the parent's losses are the parent's; its lock may have been held by
 * another thread. */
void at__losses_after_fork(void)
{
    overwritten_count = 0;
    pthread_mutex_init(&lock, NULL);
}
