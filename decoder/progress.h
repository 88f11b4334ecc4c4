/* The progress line of a long decode: on a terminal only, after the first second, rewritten in
 * place on stderr and erased at the end. */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

struct progress {
    FILE *out;      /* NULL: no progress line */
    uint64_t total; /* events in the frame headers */
    struct timespec start, last;
    bool shown;
};

/* Starts timing; shows nothing unless out is a terminal. */
void at__progress_start(struct progress *p, FILE *out, uint64_t total);

void at__progress_update(struct progress *p, uint64_t done);

/* Called per event: looks at the clock once every 64Ki events. */
static inline void at__progress_tick(struct progress *p, uint64_t done)
{
    if (p->out && (done & 0xFFFF) == 0)
        at__progress_update(p, done);
}

/* Erases the line if one was shown. */
void at__progress_end(struct progress *p);

#endif
