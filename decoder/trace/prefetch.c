/* Decoding ahead.
 *
 * Each stream has one slot for the block after its current one. The helper thread picks, among
 * the streams whose slot is EMPTY and that have frames left, the one whose current block ends
 * first (it will be needed first), marks the slot BUSY, decodes the stream's next frame into it
 * without the lock (trace bytes are read-only, and the helper has its own zstd context), and
 * marks it READY. When the merge finishes a block it takes the READY slot by swapping buffers,
 * waits while the slot is BUSY, or, when the slot is EMPTY, marks it OWN and decodes the frame
 * itself. One mutex guards every slot's state and every stream's next_frame; the handoff costs
 * a lock per block, not per event. Memory is two blocks per thread instead of one.
 *
 * Damage found by the helper is kept in the slot and reported by the merge when it takes the
 * block, so reports come in the same order, from the same thread, as without a helper. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "prefetch.h"

enum slot_state { EMPTY, BUSY, READY, OWN };

struct slot {
    enum slot_state state;
    struct at_event *events;
    size_t cap;
    uint32_t n;
    int err; /* of decoding the frame: 0, -EINVAL / -ENOTSUP / -E2BIG with why, or -ENOMEM */
    const char *why;
    const struct frame_ref *frame;
    bool by_helper; /* decoded by the helper, which keeps half of the budget for the merge */
};

struct prefetch {
    struct merge *m;
    struct slot *slots; /* one per stream */
    struct unpacker unpacker;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    bool stopping;
};

/* The stream whose next block is needed soonest and not yet begun, or NULL. */
static struct stream *pick(struct prefetch *pf)
{
    struct stream *best = NULL;
    uint64_t best_end = UINT64_MAX;
    for (size_t i = 0; i < pf->m->nstreams; i++) {
        struct stream *s = &pf->m->streams[i];
        /* Streams not begun are left to the merge: decoding their first blocks ahead would
         * hold a block for every thread of the trace, where the merge holds one for each
         * thread active at the time it is at. */
        if (pf->slots[i].state != EMPTY || s->next_frame >= s->thread->nframes ||
            s->next_frame == 0)
            continue;
        uint64_t end = s->thread->frames[s->next_frame - 1].last_tsc;
        if (!best || end < best_end) {
            best = s;
            best_end = end;
        }
    }
    return best;
}

/* Decodes the stream's next frame into the slot. The helper decodes only within half of the
 * budget, so that what it holds ahead never keeps the merge from the block it needs. */
static void decode_into(struct prefetch *pf, const struct stream *s, struct slot *slot,
                        bool by_helper)
{
    struct unpacker *u = by_helper ? &pf->unpacker : pf->m->unpacker;
    uint64_t keep = by_helper ? pf->m->budget_total / 2 : 0;
    slot->frame = &s->thread->frames[s->next_frame];
    slot->why = "";
    slot->err = at__block_decode(u, s->trace, slot->frame, &slot->events, &slot->cap,
                                 &pf->m->budget, keep, &slot->why);
    slot->n = slot->frame->count;
    slot->by_helper = by_helper;
}

static void *helper(void *arg)
{
    struct prefetch *pf = arg;
    pthread_mutex_lock(&pf->lock);
    while (!pf->stopping) {
        struct stream *s = pick(pf);
        if (!s) {
            pthread_cond_wait(&pf->work, &pf->lock);
            continue;
        }
        struct slot *slot = &pf->slots[s - pf->m->streams];
        slot->state = BUSY;
        pthread_mutex_unlock(&pf->lock);
        decode_into(pf, s, slot, true);
        pthread_mutex_lock(&pf->lock);
        slot->state = READY;
        pthread_cond_broadcast(&pf->done);
    }
    pthread_mutex_unlock(&pf->lock);
    return NULL;
}

int at__prefetch_start(struct merge *m)
{
    struct prefetch *pf = calloc(1, sizeof *pf);
    if (!pf || !(pf->slots = calloc(m->nstreams ? m->nstreams : 1, sizeof *pf->slots))) {
        free(pf);
        return -ENOMEM;
    }
    pf->m = m;
    pthread_mutex_init(&pf->lock, NULL);
    pthread_cond_init(&pf->work, NULL);
    pthread_cond_init(&pf->done, NULL);
    int err = pthread_create(&pf->thread, NULL, helper, pf);
    if (err) {
        pthread_mutex_destroy(&pf->lock);
        pthread_cond_destroy(&pf->work);
        pthread_cond_destroy(&pf->done);
        free(pf->slots);
        free(pf);
        return -err;
    }
    m->prefetch = pf;
    return 0;
}

/* Takes the slot's block (with the lock held): 1 when it had events, 0 when the frame was
 * empty or damaged (reported here), -EAGAIN when the helper left it for want of budget (the
 * merge decodes it with the whole budget), -ENOMEM. The slot's buffer becomes the stream's
 * spare. */
static int take(struct slot *slot, struct stream *s)
{
    struct at_event *events = s->events;
    size_t cap = s->cap;
    slot->state = EMPTY;
    if (slot->err == -E2BIG && slot->by_helper)
        return -EAGAIN;
    s->next_frame++;
    if (slot->err == -ENOMEM)
        return -ENOMEM;
    if (slot->err < 0) {
        at__trace_damage(s->trace, slot->frame->offset, slot->why);
        return 0;
    }
    s->events = slot->events;
    s->cap = slot->cap;
    slot->events = events;
    slot->cap = cap;
    s->n = slot->n;
    s->pos = 0;
    s->recovered = slot->frame->recovered;
    return s->n > 0;
}

static void free_slot(struct prefetch *pf, struct slot *slot)
{
    at__budget_give(&pf->m->budget, slot->cap * sizeof *slot->events);
    free(slot->events);
    slot->events = NULL;
    slot->cap = 0;
}

int at__prefetch_next(struct prefetch *pf, struct stream *s)
{
    struct slot *slot = &pf->slots[s - pf->m->streams];
    int found = 0;
    pthread_mutex_lock(&pf->lock);
    while (found == 0 && s->next_frame < s->thread->nframes) {
        while (slot->state == BUSY)
            pthread_cond_wait(&pf->done, &pf->lock);
        if (slot->state == EMPTY) {
            slot->state = OWN;
            pthread_mutex_unlock(&pf->lock);
            decode_into(pf, s, slot, false);
            pthread_mutex_lock(&pf->lock);
        }
        found = take(slot, s);
        if (found == -EAGAIN)
            found = 0;
    }
    pthread_cond_signal(&pf->work);
    pthread_mutex_unlock(&pf->lock);
    return found;
}

void at__prefetch_done(struct prefetch *pf, const struct stream *s)
{
    pthread_mutex_lock(&pf->lock);
    free_slot(pf, &pf->slots[s - pf->m->streams]);
    pthread_mutex_unlock(&pf->lock);
}

void at__prefetch_stop(struct prefetch *pf)
{
    if (!pf)
        return;
    pthread_mutex_lock(&pf->lock);
    pf->stopping = true;
    pthread_cond_signal(&pf->work);
    pthread_mutex_unlock(&pf->lock);
    pthread_join(pf->thread, NULL);
    for (size_t i = 0; i < pf->m->nstreams; i++)
        free(pf->slots[i].events);
    free(pf->slots);
    at__unpacker_free(&pf->unpacker);
    pthread_mutex_destroy(&pf->lock);
    pthread_cond_destroy(&pf->work);
    pthread_cond_destroy(&pf->done);
    free(pf);
}
