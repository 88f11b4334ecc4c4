/* The top view (tracedecode --top, which actortrace top runs): the live model's last whole
 * second on a terminal, drawn with ncurses and redrawn as the seconds close. Keys: d, r, s, c,
 * p sort the actors by mailbox depth, received, sent, core share, p99; / filters them by a
 * part of their name (an empty one clears it); q quits. After the programs ended, the view
 * keeps their last second and says so. */
#include <curses.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "order.h"
#include "watch.h"

enum sort_key { BY_DEPTH, BY_RECEIVED, BY_SENT, BY_CORE, BY_P99 };

struct top {
    struct watch w;
    const struct watch_options *o;
    enum sort_key sort;
    char filter[64];
    size_t *order;
    size_t norder, order_cap;
};

static uint64_t sort_value(const struct live_actor *a, enum sort_key key)
{
    switch (key) {
    case BY_RECEIVED:
        return a->last.received;
    case BY_SENT:
        return a->last.sent;
    case BY_CORE:
        return a->last.busy_ns;
    case BY_P99:
        return a->last.p99_ns;
    default:
        return a->last.depth;
    }
}

static struct top *sorting; /* qsort's comparison has no context argument */

static int by_key(const void *x, const void *y)
{
    const struct live_actor *a = &sorting->w.live.actors[*(const size_t *)x];
    const struct live_actor *b = &sorting->w.live.actors[*(const size_t *)y];
    int c = at__order(sort_value(b, sorting->sort), sort_value(a, sorting->sort));
    if (!c)
        c = at__order(b->last.received, a->last.received);
    return c ? c : at__order(a->id, b->id);
}

/* The actors active in the last second that pass the filter, sorted. */
static int order_actors(struct top *t)
{
    const struct live *l = &t->w.live;
    if (l->nactors > t->order_cap) {
        size_t *grown = realloc(t->order, l->nactors * sizeof *grown);
        if (!grown)
            return -1;
        t->order = grown;
        t->order_cap = l->nactors;
    }
    t->norder = 0;
    for (size_t i = 0; i < l->nactors; i++) {
        char name[64];
        at__live_actor_name(l, &t->w.f.d, &l->actors[i], name, sizeof name);
        if (l->actors[i].was_active && (!t->filter[0] || strstr(name, t->filter)))
            t->order[t->norder++] = i;
    }
    sorting = t;
    qsort(t->order, t->norder, sizeof *t->order, by_key);
    return 0;
}

static void draw_title(const struct top *t)
{
    const struct decode *d = &t->w.f.d;
    const struct trace *first = &d->traces[0];
    const char *exe = first->process.known ? first->process.exe : first->path;
    if (d->ntraces == 1 && first->process.known)
        mvprintw(0, 0, "actortrace top: pid %" PRIu64 " %s", first->process.pid, exe);
    else
        mvprintw(0, 0, "actortrace top: %zu processes, %s ...", d->ntraces, exe);
    const struct live *l = &t->w.live;
    uint64_t shown = at__live_shown(l);
    if (l->ended)
        mvprintw(1, 0,
                 "the run ended: its last second, second %" PRIu64 " (+%" PRIu64
                 " s to +%.3f s, counts as far as it went)",
                 shown, shown - 1, (double)(l->last_ns - l->origin_ns) / 1e9);
    else if (shown)
        mvprintw(1, 0, "second %" PRIu64 " (+%" PRIu64 " s to +%" PRIu64 " s), running", shown,
                 shown - 1, shown);
    else
        mvprintw(1, 0, "waiting for the first whole second");
    static const char *const names[] = {"depth", "received", "sent", "core%", "p99"};
    mvprintw(2, 0, "events %" PRIu64 "%s  dropped %" PRIu64 "  sort: %s  filter: %s",
             l->last_events, l->ended ? "" : "/s", at__watch_dropped(d), names[t->sort],
             t->filter[0] ? t->filter : "(none)");
}

/* Draws the actors from row y, leaving room for the workers; returns the next row. */
static int draw_actors(struct top *t, int y, int room)
{
    char line[256];
    attron(A_REVERSE);
    mvprintw(y++, 0, "%-*s", COLS, at__live_heads);
    attroff(A_REVERSE);
    if (order_actors(t) < 0)
        return y;
    for (size_t i = 0; i < t->norder && y < room; i++) {
        at__live_row(&t->w.live, &t->w.f.d, &t->w.live.actors[t->order[i]], line, sizeof line);
        mvprintw(y++, 0, "%s", line);
    }
    return y;
}

static void draw(struct top *t)
{
    const struct live *l = &t->w.live;
    erase();
    draw_title(t);
    int workers = (int)l->nworkers < LINES / 3 ? (int)l->nworkers : LINES / 3;
    int y = draw_actors(t, 4, LINES - workers - 3);
    attron(A_REVERSE);
    mvprintw(++y, 0, "%-*s", COLS, "WORKER   NAME              BUSY");
    attroff(A_REVERSE);
    for (int i = 0; i < workers && ++y < LINES - 1; i++) {
        char row[128];
        at__live_worker_row(l, &t->w.f.d, &l->workers[i], row, sizeof row);
        mvprintw(y, 0, "%s", row);
    }
    mvprintw(LINES - 1, 0, "q quit  d depth  r received  s sent  c core%%  p p99  / filter");
    refresh();
}

static void ask_filter(struct top *t)
{
    mvprintw(LINES - 1, 0, "filter (part of a name, empty: none): ");
    clrtoeol();
    echo();
    curs_set(1);
    timeout(-1);
    getnstr(t->filter, sizeof t->filter - 1);
    noecho();
    curs_set(0);
    timeout(100);
}

/* Returns false on q. */
static bool key(struct top *t, int ch)
{
    static const char keys[] = "drscp";
    const char *k = ch > 0 && ch < 256 ? strchr(keys, ch) : NULL;
    if (k && *k)
        t->sort = (enum sort_key)(k - keys);
    else if (ch == '/')
        ask_filter(t);
    return ch != 'q' && ch != 'Q';
}

static int top_loop(struct top *t)
{
    int err = 0;
    uint64_t drawn = UINT64_MAX;
    bool ended_drawn = false;
    for (;;) {
        if (!t->w.ended && (err = at__watch_poll(&t->w, at__watch_stopped)) < 0)
            break;
        bool changed = at__live_shown(&t->w.live) != drawn || t->w.ended != ended_drawn;
        if (changed) {
            draw(t);
            drawn = at__live_shown(&t->w.live);
            ended_drawn = t->w.ended;
        }
        int ch = getch();
        if (at__watch_stopped || !key(t, ch))
            break;
        if (ch != ERR)
            draw(t);
    }
    return err;
}

int at__top_run(const struct watch_options *o)
{
    /* its keys come from a terminal: on anything else getch() fails at once, every time, and
     * the view would spin until a signal ends it */
    if (!isatty(STDIN_FILENO)) {
        fputs("tracedecode: --top reads its keys from a terminal, and standard input is not "
              "one\n",
              stderr);
        return 2;
    }
    struct top t = {.o = o};
    int err = at__watch_init(&t.w, o);
    if (err == 0) {
        at__watch_start();
        initscr();
        cbreak();
        noecho();
        keypad(stdscr, TRUE);
        curs_set(0);
        timeout(o->poll_ms ? (int)o->poll_ms : 100);
        err = top_loop(&t);
        endwin();
    }
    at__watch_free(&t.w);
    free(t.order);
    if (err < 0)
        fprintf(stderr, "tracedecode: %s\n", strerror(-err));
    return err < 0 ? 2 : 0;
}
