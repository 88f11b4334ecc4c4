/* Ring files that outlive their process (rings.c). */
#ifndef RINGS_H
#define RINGS_H

#include <stdbool.h>
#include <stddef.h>

/* tracedecode --recover: for each trace that did not end cleanly and whose ring file is there
 * (its process gone, or force), appends the ring's events, losses and clock samples to the trace
 * and removes the ring. Returns the exit status: 0, or 2 after a message on stderr. */
int at__recover_files(const char *const *paths, size_t n, bool force);

/* tracedecode --rings: one line per ring file in dir (path, pid, running or gone, size, trace);
 * with remove, the rings whose process is gone are recovered into their trace and removed.
 * Returns the exit status. */
int at__rings_list(const char *dir, bool remove);

#endif
