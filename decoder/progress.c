/* The progress line: "tracedecode: 42% (10.5M of 25.0M events, 14.1M events/s)", redrawn at
 * most four times a second with a carriage return, only when stderr is a terminal, so that
 * logs and pipes never see it. */
#include <unistd.h>

#include "progress.h"

#define QUIET_NS  1000000000ll /* a decode shorter than this shows nothing */
#define REDRAW_NS 250000000ll

static long long since(const struct timespec *a, const struct timespec *b)
{
    return (b->tv_sec - a->tv_sec) * 1000000000ll + (b->tv_nsec - a->tv_nsec);
}

void at__progress_start(struct progress *p, FILE *out, uint64_t total)
{
    *p = (struct progress){.out = out && isatty(fileno(out)) ? out : NULL, .total = total};
    clock_gettime(CLOCK_MONOTONIC, &p->start);
    p->last = p->start;
}

void at__progress_update(struct progress *p, uint64_t done)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long elapsed = since(&p->start, &now);
    if (elapsed < QUIET_NS || since(&p->last, &now) < REDRAW_NS)
        return;
    p->last = now;
    p->shown = true;
    double rate = (double)done / ((double)elapsed / 1e9);
    fprintf(p->out, "\rtracedecode: %3.0f%% (%.1fM of %.1fM events, %.1fM events/s)\033[K",
            p->total ? 100.0 * (double)done / (double)p->total : 100.0, (double)done / 1e6,
            (double)p->total / 1e6, rate / 1e6);
    fflush(p->out);
}

void at__progress_end(struct progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
}
