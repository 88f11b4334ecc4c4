/* Decoding ahead on a second core: a helper thread decompresses and decodes each stream's next
 * block while the merge works through the current one (prefetch.c explains the handoff). */
#ifndef PREFETCH_H
#define PREFETCH_H

#include "merge.h"

struct prefetch;

/* Starts the helper for the streams of m. Returns 0 or a negative errno (then the merge goes
 * on decoding by itself). */
int at__prefetch_start(struct merge *m);

/* Moves stream s to its next block: the one decoded ahead, waited for if the helper is on it,
 * or decoded here if the helper has not started it. Returns 1, 0 when the thread has no
 * frames left, or -ENOMEM. Damaged frames are reported and skipped, as without a helper. */
int at__prefetch_next(struct prefetch *pf, struct stream *s);

/* Frees the spare block of stream s, whose thread has no frames left (no decode of it can be
 * under way), giving its memory back to the budget. */
void at__prefetch_done(struct prefetch *pf, const struct stream *s);

/* Stops and joins the helper; accepts NULL. */
void at__prefetch_stop(struct prefetch *pf);

#endif
