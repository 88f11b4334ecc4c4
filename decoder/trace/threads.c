/* A trace's thread table: its threads in the order they appear, found by tid through an idmap,
 * each with the index of its EVENTS frames. The reader (reader.c), the metadata (meta.c) and
 * recovery (recover.c) add to it. */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "order.h"
#include "trace.h"

struct thread *at__trace_thread(struct trace *t, uint32_t tid)
{
    uint32_t index;
    if (at__idmap_get(&t->thread_index, tid, &index) == 0)
        return &t->threads[index];
    if (at__array_grow((void **)&t->threads, &t->threads_cap, t->nthreads, sizeof *t->threads, 16) <
            0 ||
        at__idmap_put(&t->thread_index, tid, (uint32_t)t->nthreads) < 0)
        return NULL;
    struct thread *th = &t->threads[t->nthreads++];
    *th = (struct thread){.tid = tid};
    return th;
}

int at__thread_add_frame(struct thread *th, const struct frame_ref *f)
{
    if (at__array_grow((void **)&th->frames, &th->frames_cap, th->nframes, sizeof *th->frames, 16) <
        0)
        return -ENOMEM;
    th->frames[th->nframes++] = *f;
    th->events += f->count;
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    const struct frame_ref *x = a, *y = b;
    int c = at__order(x->seq, y->seq);
    return c ? c : at__order(x->offset, y->offset);
}

static int by_tid(const void *a, const void *b)
{
    const struct thread *x = a, *y = b;
    return at__order(x->tid, y->tid);
}

int at__threads_sort(struct trace *t)
{
    /* qsort is not given NULL arrays: empty ones are never allocated. */
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].nframes > 1)
            qsort(t->threads[i].frames, t->threads[i].nframes, sizeof(struct frame_ref), by_seq);
    if (t->nthreads > 1)
        qsort(t->threads, t->nthreads, sizeof *t->threads, by_tid);
    at__idmap_free(&t->thread_index);
    for (size_t i = 0; i < t->nthreads; i++)
        if (at__idmap_put(&t->thread_index, t->threads[i].tid, (uint32_t)i) < 0)
            return -ENOMEM;
    return 0;
}

void at__threads_free(struct trace *t)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        free(t->threads[i].frames);
        free(t->threads[i].name);
    }
    free(t->threads);
    at__idmap_free(&t->thread_index);
}
