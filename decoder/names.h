/* The names of a trace: NAME records by space (messages, actors, paths, event kinds), and the
 * built-in event kind names of at_events.h. Strings are kept as recorded (any bytes); output
 * formats escape them. */
#ifndef NAMES_H
#define NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"

/* How every view names a message that has no name (name id 0). */
#define AT_UNNAMED "(unnamed)"

struct name {
    char *s; /* NULL: no name */
    uint32_t len;
};

struct names {
    struct idmap msg, actor; /* id -> index into entries */
    struct name *entries;
    size_t n, cap;
    struct name path[256], kind[256];
};

/* Defines (or redefines: the last one wins) the name of id in space (enum at_name_space).
 * Ids a space cannot hold (0, a path above 255, an event kind outside 64-255) and unknown
 * spaces are ignored. Returns 0 or -ENOMEM. */
int at__names_set(struct names *nm, unsigned space, uint64_t id, const uint8_t *s, size_t len);

/* The name of id in space, or NULL. */
const struct name *at__names_get(const struct names *nm, unsigned space, uint64_t id);

/* The built-in name of kind ("send"), or NULL for kind 0, reserved and registered kinds. */
const char *at__kind_builtin(unsigned kind);

void at__names_free(struct names *nm);

#endif
