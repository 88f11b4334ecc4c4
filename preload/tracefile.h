/* The trace file's creation (tracefile.c), beside config: used by lifecycle. */
#ifndef AT_PRELOAD_TRACEFILE_H
#define AT_PRELOAD_TRACEFILE_H

#include <stddef.h>

/* Creates the trace file named by ACTORTRACE_OUT into path; returns its fd or a negative
 * errno (path holds the name tried). */
int at__trace_create(char *path, size_t cap, int forked_child);

#endif
