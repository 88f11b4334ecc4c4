/* Call stacks in a trace (MODULE and STACK records, docs/STACKS.md) and the companion events
 * of kind "stack" that attach them to the event recorded next on the same thread. */
#ifndef STACKS_H
#define STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge.h"
#include "names.h"

struct stack_table;
struct body;

/* Loads one MODULE or STACK record body into t's table. Returns 0, -EINVAL for a malformed
 * body, or -ENOMEM. */
int at__stacks_load(struct trace *t, uint8_t type, struct body *b);

void at__stacks_free(struct stack_table *s);

/* For each merged event: true when it is a "stack" companion (it is kept for the thread's
 * next event of the kind it names, and not an event of its own). Otherwise *json is what follows
 * "stack": for the event (*len bytes): the JSON array ["func+0x1a (module)",...], or, when the
 * recorder skipped the capture, null and a "stack_skipped":true member; NULL when none. */
bool at__stacks_event(const struct merged *e, const struct name *kind, const char **json,
                      size_t *len);

#endif
