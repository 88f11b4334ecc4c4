/* Name tables of one trace. Messages and actors have sparse 32- and 64-bit ids and go through
 * an idmap into one array of names; paths and event kinds are 8-bit and index arrays. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_events.h"
#include "at_format.h"
#include "names.h"

static const char *const builtin[AT_EV_BUILTIN_END] = {
#define AT_EV_NAME(name, str) [AT_EV_##name] = str,
    AT_EVENT_LIST(AT_EV_NAME)
#undef AT_EV_NAME
};

const char *at__kind_builtin(unsigned kind)
{
    return kind < AT_EV_BUILTIN_END ? builtin[kind] : NULL;
}

/* Replaces *slot with a copy of s[0..len). */
static int assign(struct name *slot, const uint8_t *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, s, len);
    copy[len] = '\0';
    free(slot->s);
    slot->s = copy;
    slot->len = (uint32_t)len; /* at most 16 MiB: a name lies inside one META payload */
    return 0;
}

static int set_mapped(struct names *nm, struct idmap *map, uint64_t id, const uint8_t *s,
                      size_t len)
{
    uint32_t index;
    if (at__idmap_get(map, id, &index) == 0)
        return assign(&nm->entries[index], s, len);
    if (at__array_reserve((void **)&nm->entries, &nm->cap, nm->n, sizeof *nm->entries) < 0)
        return -ENOMEM;
    nm->entries[nm->n] = (struct name){0};
    int err = assign(&nm->entries[nm->n], s, len);
    if (err == 0)
        err = at__idmap_put(map, id, (uint32_t)nm->n);
    if (err < 0) {
        free(nm->entries[nm->n].s);
        return err;
    }
    nm->n++;
    return 0;
}

int at__names_set(struct names *nm, unsigned space, uint64_t id, const uint8_t *s, size_t len)
{
    switch (space) {
    case AT_NAME_MSG:
        return id != 0 && id <= UINT32_MAX ? set_mapped(nm, &nm->msg, id, s, len) : 0;
    case AT_NAME_ACTOR:
        return id != 0 ? set_mapped(nm, &nm->actor, id, s, len) : 0;
    case AT_NAME_PATH:
        if (len == strlen(AT_MSG_TYPE_MARK) && memcmp(s, AT_MSG_TYPE_MARK, len) == 0)
            nm->msg_shift = 1;
        return id != 0 && id <= 255 ? assign(&nm->path[id], s, len) : 0;
    case AT_NAME_EVENT:
        return id >= AT_EV_FIRST_REGISTERED && id <= 255 ? assign(&nm->kind[id], s, len) : 0;
    default:
        return 0;
    }
}

const struct name *at__names_get(const struct names *nm, unsigned space, uint64_t id)
{
    const struct name *found = NULL;
    uint32_t index;
    switch (space) {
    case AT_NAME_MSG:
        found = at__idmap_get(&nm->msg, id, &index) == 0 ? &nm->entries[index] : NULL;
        break;
    case AT_NAME_ACTOR:
        found = at__idmap_get(&nm->actor, id, &index) == 0 ? &nm->entries[index] : NULL;
        break;
    case AT_NAME_PATH:
        found = id <= 255 ? &nm->path[id] : NULL;
        break;
    case AT_NAME_EVENT:
        found = id <= 255 ? &nm->kind[id] : NULL;
        break;
    }
    return found && found->s ? found : NULL;
}

void at__names_mark_given(struct names *nm, unsigned space, uint64_t id)
{
    struct name *n = (struct name *)at__names_get(nm, space, id); /* entries are ours */
    if (n)
        n->given = true;
}

void at__names_free(struct names *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->entries[i].s);
    for (size_t i = 0; i < 256; i++) {
        free(nm->path[i].s);
        free(nm->kind[i].s);
    }
    free(nm->entries);
    at__idmap_free(&nm->msg);
    at__idmap_free(&nm->actor);
    *nm = (struct names){0};
}
