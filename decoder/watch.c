/* The follow loop (watch.h) and tracedecode --follow: JSONL as the frames come, or the live
 * model's last second as text once a second (--format stats). */
#include <errno.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"

volatile sig_atomic_t at__watch_stopped;

static void on_signal(int sig)
{
    (void)sig;
    at__watch_stopped = 1;
}

void at__watch_start(void)
{
    /* the program comes first: a follower decodes every event it records, and on a machine
     * with no core to spare would otherwise take one from it */
    if (setpriority(PRIO_PROCESS, 0, 19) < 0)
        perror("tracedecode: cannot lower its priority");
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: a sleep ends early */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int to_live(void *ctx, const struct decode *d, const struct merged *e)
{
    return at__live_event(ctx, d, e);
}

int at__watch_init(struct watch *w, const struct watch_options *o)
{
    *w = (struct watch){.emit = to_live, .ctx = &w->live};
    int err = at__follow_init(&w->f, o->paths, o->n, o->ring, stderr);
    return err == 0 ? at__live_init(&w->live, o->n) : err;
}

/* The time up to which every event has been released: the earliest of the last clock samples
 * of the files still growing. */
static uint64_t released_to(const struct follower *f)
{
    uint64_t to = UINT64_MAX;
    for (size_t i = 0; i < f->d.ntraces; i++) {
        const struct trace *t = &f->d.traces[i];
        if (f->files[i].ended)
            continue;
        if (t->clock.n == 0)
            return 0;
        size_t hint = 0;
        uint64_t ns = at__clock_ns(&t->clock, t->clock.samples[t->clock.n - 1].tsc, &hint);
        to = ns < to ? ns : to;
    }
    return to;
}

int at__watch_poll(struct watch *w, bool stop)
{
    int ended = at__follow_poll(&w->f, stop);
    if (ended < 0)
        return ended;
    w->ended = ended || stop;
    int err = at__follow_release(&w->f, ended, w->emit, w->ctx);
    if (err < 0)
        return err;
    uint64_t left = at__follow_pending(&w->f);
    if (stop && left)
        fprintf(stderr,
                "tracedecode: interrupted: %llu events read after the last clock sample "
                "are not written (their ts_ns is not known yet)\n",
                (unsigned long long)left);
    if (w->ended)
        at__live_end(&w->live);
    else
        at__live_advance(&w->live, released_to(&w->f));
    return 0;
}

uint64_t at__watch_dropped(const struct decode *d)
{
    return at__decode_summary(d, (struct summary){0}).dropped;
}

/* Sleeps ms milliseconds, less when a signal comes. */
static void watch_sleep(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    if (ms && !at__watch_stopped)
        nanosleep(&ts, NULL);
}

void at__watch_free(struct watch *w)
{
    at__live_free(&w->live);
    at__follow_free(&w->f);
}

/* ---- tracedecode --follow ------------------------------------------------------------------ */

struct follow_out {
    struct out o;
    struct watch *w;
    const struct output_ops *format;
    uint64_t printed; /* the last second written (--format stats) */
};

static int to_format(void *ctx, const struct decode *d, const struct merged *e)
{
    struct follow_out *fo = ctx;
    if (fo->format)
        return fo->format->event(&fo->o, d, e);
    return at__live_event(&fo->w->live, d, e);
}

static void say(struct out *o, const char *line)
{
    size_t len = strlen(line);
    char *p = at__out_reserve(o, len + 1);
    if (p)
        at__out_commit(o, at__put(at__put(p, line, len), "\n", 1));
}

/* --format stats: the last second, once. */
static void write_second(struct follow_out *fo)
{
    const struct live *l = &fo->w->live;
    uint64_t shown = at__live_shown(l);
    if (shown == 0 || shown == fo->printed)
        return;
    fo->printed = shown;
    char line[256];
    snprintf(line, sizeof line,
             "second %" PRIu64 "%s: %" PRIu64 " events, %" PRIu64 " dropped so far", shown,
             l->ended ? " (the last, the run ended)" : "", l->last_events,
             at__watch_dropped(&fo->w->f.d));
    say(&fo->o, line);
    say(&fo->o, at__live_heads);
    for (size_t i = 0; i < l->nactors; i++)
        if (l->actors[i].was_active) {
            at__live_row(l, &fo->w->f.d, &l->actors[i], line, sizeof line);
            say(&fo->o, line);
        }
    for (size_t i = 0; i < l->nworkers; i++) {
        char row[128];
        at__live_worker_row(l, &fo->w->f.d, &l->workers[i], row, sizeof row);
        snprintf(line, sizeof line, "worker %s", row);
        say(&fo->o, line);
    }
    say(&fo->o, "");
}

static int follow_loop(struct follow_out *fo, const struct watch_options *o)
{
    int err = 0;
    while (err == 0 && !fo->w->ended) {
        bool stop = at__watch_stopped;
        err = at__watch_poll(fo->w, stop);
        if (err == 0 && !fo->format)
            write_second(fo);
        if (err == 0)
            err = at__out_flush(&fo->o);
        if (err == 0 && !fo->w->ended)
            watch_sleep(o->poll_ms);
    }
    return err;
}

/* The summary line (JSONL) and the exit status, as a decode gives them. */
static int finish(struct follow_out *fo)
{
    struct summary s = at__decode_summary(&fo->w->f.d, fo->w->f.counts);
    int err = fo->format ? fo->format->end(&fo->o, &fo->w->f.d, &s) : 0;
    if (err == 0)
        err = at__out_flush(&fo->o);
    return err < 0 ? err : s.truncated || s.damaged_frames > 0;
}

int at__watch_follow(const struct watch_options *o, int fd)
{
    struct watch w;
    struct follow_out fo = {.w = &w, .format = o->format};
    int err = at__watch_init(&w, o);
    if (err == 0 && (err = at__out_init(&fo.o, fd)) == 0) {
        w.emit = to_format;
        w.ctx = &fo;
        at__watch_start();
        err = follow_loop(&fo, o);
        if (err == 0)
            err = finish(&fo);
        at__out_free(&fo.o);
    }
    at__watch_free(&w);
    if (err < 0 && err != -EBADMSG && err != -ENOTSUP)
        fprintf(stderr, "tracedecode: %s\n", strerror(-err));
    return err < 0 ? 2 : err;
}
