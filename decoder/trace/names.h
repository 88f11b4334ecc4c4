/* The names of a trace: NAME records by space (messages, actors, paths, event kinds), and the
 * built-in event kind names of at_events.h. Strings are kept as recorded (any bytes); output
 * formats escape them. */
#ifndef NAMES_H
#define NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "at_format.h"
#include "idmap.h"

/* How every view names a message that has no name (name id 0). */
#define AT_UNNAMED "(unnamed)"

struct name {
    char *s; /* NULL: no name */
    uint32_t len;
    bool given; /* by a --names file */
};

/* A trace that registers this path name numbers its message names by a runtime's message
 * types plus one (Aether's, which start at 0; 0 is no name in a trace). */
#define AT_MSG_TYPE_MARK "type+1"

struct names {
    struct idmap msg, actor; /* id -> index into entries */
    struct name *entries;
    size_t n, cap;
    struct name path[256], kind[256];
    uint32_t msg_shift; /* 1 in a trace that registered AT_MSG_TYPE_MARK, else 0 */
};

/* The number a message name id is shown and given by (name_N, --names, --msg name_N): the
 * message type in a trace whose ids are types plus one, else the id itself. */
static inline uint64_t at__names_msg_number(const struct names *nm, uint64_t id)
{
    return id >= nm->msg_shift ? id - nm->msg_shift : id;
}

/* Defines (or redefines: the last one wins) the name of id in space (enum at_name_space).
 * Ids a space cannot hold (0, a path above 255, an event kind outside 64-255) and unknown
 * spaces are ignored. Returns 0 or -ENOMEM. */
int at__names_set(struct names *nm, unsigned space, uint64_t id, const uint8_t *s, size_t len);

/* How the views call an actor by its id: "actor N", or for an actor of another node
 * (AT_ACTOR_REMOTE) "remote actor N", N its id there; it never takes a name of this trace. */
static inline const char *at__actor_prefix(uint64_t id)
{
    return id & AT_ACTOR_REMOTE ? "remote actor " : "actor ";
}

static inline uint64_t at__actor_number(uint64_t id)
{
    return id & ~AT_ACTOR_REMOTE;
}

/* Marks the name of id in space as given by a --names file. */
void at__names_mark_given(struct names *nm, unsigned space, uint64_t id);

/* The name of id in space, or NULL. */
const struct name *at__names_get(const struct names *nm, unsigned space, uint64_t id);

/* The built-in name of kind ("send"), or NULL for kind 0, reserved and registered kinds. */
const char *at__kind_builtin(unsigned kind);

void at__names_free(struct names *nm);

#endif
