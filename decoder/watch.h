/* Watching running programs: tracedecode --follow (watch.c) and the top view (top.c), both a
 * loop that polls the follower (follow.h) and feeds what it releases to an output or to the
 * live model (live.h). */
#ifndef WATCH_H
#define WATCH_H

#include <signal.h>
#include <stdbool.h>

#include "follow.h"
#include "live.h"
#include "output.h"

struct watch_options {
    const char *const *paths;
    size_t n;
    bool ring;                       /* --ring: the events still in the ring files too */
    unsigned poll_ms;                /* between polls; 0: poll again at once */
    const struct output_ops *format; /* --follow: jsonl; NULL: the live model's seconds */
};

struct watch {
    struct follower f;
    struct live live;
    bool ended; /* every file has ended (or the watch was interrupted) */
    follow_emit emit;
    void *ctx;
};

/* Set by SIGINT and SIGTERM once at__watch_start installed the handler. */
extern volatile sig_atomic_t at__watch_stopped;
/* Lowers the process to nice 19 and installs the handler. */
void at__watch_start(void);

/* Returns 0 or a negative errno. */
int at__watch_init(struct watch *w, const struct watch_options *o);

/* One poll: reads what the files gained, releases what can be to w->emit (the live model by
 * default) and closes the live model's seconds that are whole. With stop the watch ends; the
 * events after the last clock sample of a file still growing are left out (and counted on
 * stderr): their ts_ns is not known yet. Returns 0 or a negative errno. */
int at__watch_poll(struct watch *w, bool stop);

/* Events the recorders lost so far, over every trace. */
uint64_t at__watch_dropped(const struct decode *d);

void at__watch_free(struct watch *w);

/* tracedecode --follow: writes to fd until every process ended or a signal came; returns the
 * exit status. */
int at__watch_follow(const struct watch_options *o, int fd);

/* tracedecode --top (top.c): the terminal view until q; returns the exit status. */
int at__top_run(const struct watch_options *o);

#endif
