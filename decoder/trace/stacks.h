/* Call stacks in a trace (MODULE and STACK records, docs/STACKS.md) and the companion events
 * of kind "stack" that attach them to the event recorded next on the same thread. */
#ifndef STACKS_H
#define STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "merge.h"
#include "names.h"

#define AT_STACK_SKIPPED    UINT32_MAX /* merged.stack of an event whose capture was skipped */
#define AT_STACK_FRAMES_MAX 256        /* frames of a STACK record; more is malformed */

struct stack_table;
struct body;

/* A loaded object frames point into. */
struct stack_module {
    char *path;       /* as the process saw it */
    const char *base; /* its file name, in path */
    char *build_id;   /* hex, "" when none */
    bool runtime;     /* it defines a function the recorder wraps (a runtime's library) */
};

struct stack_frame {
    uint32_t module;       /* id; 0: in no module */
    uint32_t func_len;     /* 0: no function covers it */
    uint64_t addr, offset; /* ELF virtual address in the module; offset into the function */
    const char *func;      /* func_len bytes */
};

/* Loads one MODULE or STACK record body into t's table. Returns 0, -EINVAL for a malformed
 * body, or -ENOMEM. */
int at__stacks_load(struct trace *t, uint8_t type, struct body *b);

void at__stacks_free(struct stack_table *s);

/* For each merged event, before filters: true when it is a "stack" companion (kept for the
 * thread's next event of the kind it names, and not an event of its own). Otherwise sets
 * e->stack: the id of the event's stack, AT_STACK_SKIPPED, or 0 when it has none. */
bool at__stacks_pair(struct merged *e);

/* What follows "stack": in JSON for stack id (a merged.stack) of t (*len bytes): the array
 * ["func+0x1a (module)",...], or null and a "stack_skipped":true member; NULL when none. */
const char *at__stacks_json(const struct trace *t, uint32_t stack, size_t *len);

/* The frames of stack id of t, innermost first, and their number; NULL when t has no such
 * stack. */
const struct stack_frame *at__stacks_frames(const struct trace *t, uint32_t id, uint32_t *n);

/* Module id of t; NULL when there is none. */
const struct stack_module *at__stacks_module(const struct trace *t, uint32_t id);

/* The frame of stack id that made its event: the innermost frame outside the runtimes'
 * libraries (the first when every frame is in one). NULL when t has no such stack. */
const struct stack_frame *at__stacks_caller(const struct trace *t, uint32_t id);

#endif
