/* Call stacks: the MODULE and STACK records of a trace, each stack rendered once at load as
 * the JSON array the outputs print, and the pairing of "stack" companion events with the event
 * they precede (docs/STACKS.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "at_codec.h"
#include "at_events.h"
#include "body.h"
#include "output.h"
#include "stacks.h"
#include "trace.h"

#define IDS_MAX (1u << 16) /* ids beyond this are refused: the recorder keeps 4096 stacks */
#define FRAMES_MAX 256
#define FRAME_TEXT_MAX 1024

struct stack_json {
    char *s; /* NULL: no such stack */
    size_t len;
};

struct stack_table {
    char **modules; /* by id - 1: the module file's base name */
    size_t nmodules;
    struct stack_json *stacks; /* by id - 1 */
    size_t nstacks;
};

/* A string field: its bytes stay in the record. */
static const char *str(struct body *b, size_t *len)
{
    uint64_t n = at__body_num(b);
    if (b->bad || n > (uint64_t)(b->end - b->p)) {
        b->bad = true;
        *len = 0;
        return "";
    }
    const char *s = (const char *)b->p;
    b->p += n;
    *len = (size_t)n;
    return s;
}

/* Makes slot id - 1 of an array of `size`-byte items exist, zeroing new items. */
static int grow(void **items, size_t *n, size_t size, uint64_t id)
{
    if (id == 0 || id > IDS_MAX)
        return -EINVAL;
    if (id <= *n)
        return 0;
    void *grown = realloc(*items, id * size);
    if (!grown)
        return -ENOMEM;
    memset((char *)grown + *n * size, 0, (id - *n) * size);
    *items = grown;
    *n = id;
    return 0;
}

static int on_module(struct stack_table *s, struct body *b)
{
    uint64_t id = at__body_num(b);
    size_t len;
    const char *path = str(b, &len);
    if (b->bad)
        return -EINVAL;
    const char *slash = memrchr(path, '/', len);
    size_t base = slash ? (size_t)(slash + 1 - path) : 0;
    int err = grow((void **)&s->modules, &s->nmodules, sizeof *s->modules, id);
    if (err < 0)
        return err;
    char *name = strndup(path + base, len - base);
    if (!name)
        return -ENOMEM;
    free(s->modules[id - 1]);
    s->modules[id - 1] = name;
    return 0;
}

/* One frame as text: "func+0x1a (module)", "0x1234 (module)" without a function, "0x1234"
 * outside any module. */
static size_t frame_text(const struct stack_table *s, struct body *b, char *out)
{
    uint64_t module = at__body_num(b), addr = at__body_num(b), offset;
    size_t func_len;
    const char *func = str(b, &func_len);
    offset = at__body_num(b);
    const char *mod = module && module <= s->nmodules ? s->modules[module - 1] : NULL;
    int n;
    if (func_len > 512)
        func_len = 512;
    if (func_len)
        n = snprintf(out, FRAME_TEXT_MAX, "%.*s+0x%llx", (int)func_len, func,
                     (unsigned long long)offset);
    else
        n = snprintf(out, FRAME_TEXT_MAX, "0x%llx", (unsigned long long)addr);
    n = n < FRAME_TEXT_MAX ? n : FRAME_TEXT_MAX - 1;
    if (mod)
        n += snprintf(out + n, FRAME_TEXT_MAX - (size_t)n, " (%s)", mod);
    else if (module)
        n += snprintf(out + n, FRAME_TEXT_MAX - (size_t)n, " (module %llu)",
                      (unsigned long long)module);
    return n < FRAME_TEXT_MAX ? (size_t)n : FRAME_TEXT_MAX - 1;
}

static int on_stack(struct stack_table *s, struct body *b)
{
    uint64_t id = at__body_num(b), frames = at__body_num(b);
    if (b->bad || frames > FRAMES_MAX)
        return -EINVAL;
    int err = grow((void **)&s->stacks, &s->nstacks, sizeof *s->stacks, id);
    if (err < 0)
        return err;
    char *json = malloc(2 + frames * (1 + at__json_str_bound(FRAME_TEXT_MAX)));
    if (!json)
        return -ENOMEM;
    char *p = json, text[FRAME_TEXT_MAX];
    *p++ = '[';
    for (uint64_t i = 0; i < frames && !b->bad; i++) {
        size_t len = frame_text(s, b, text);
        if (i)
            *p++ = ',';
        p = at__fmt_json_str(p, text, len);
    }
    *p++ = ']';
    if (b->bad) {
        free(json);
        return -EINVAL;
    }
    free(s->stacks[id - 1].s);
    s->stacks[id - 1] = (struct stack_json){json, (size_t)(p - json)};
    return 0;
}

int at__stacks_load(struct trace *t, uint8_t type, struct body *b)
{
    if (!t->stacks && !(t->stacks = calloc(1, sizeof *t->stacks)))
        return -ENOMEM;
    return type == AT_META_MODULE ? on_module(t->stacks, b) : on_stack(t->stacks, b);
}

void at__stacks_free(struct stack_table *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmodules; i++)
        free(s->modules[i]);
    for (size_t i = 0; i < s->nstacks; i++)
        free(s->stacks[i].s);
    free(s->modules);
    free(s->stacks);
    free(s);
}

/* What an event whose capture the recorder skipped shows. */
static const char SKIPPED[] = "null,\"stack_skipped\":true";

static bool is_companion(const struct at_event *ev, const struct name *kind)
{
    return ev->kind >= AT_EV_FIRST_REGISTERED && kind && kind->len == 5 &&
           memcmp(kind->s, "stack", 5) == 0;
}

/* Keeps a companion for its event; the oldest goes when a thread nests deeper than kept. */
static void push_pending(struct thread *th, const struct at_event *ev)
{
    const size_t max = sizeof th->pending_stacks / sizeof th->pending_stacks[0];
    if (th->npending_stacks == max) {
        memmove(th->pending_stacks, th->pending_stacks + 1, (max - 1) * sizeof th->pending_stacks[0]);
        th->npending_stacks--;
    }
    th->pending_stacks[th->npending_stacks++] =
        (struct pending_stack){ev->actor, (uint32_t)ev->msg, (uint8_t)ev->name};
}

/* The id of the companion of ev, newest first: a handler that interrupted the recording of an
 * event comes between its companion and it. Companions newer than the match lost their event
 * and go. -1 when there is none. */
static int64_t pop_pending(struct thread *th, const struct at_event *ev)
{
    for (size_t i = th->npending_stacks; i-- > 0;) {
        const struct pending_stack *p = &th->pending_stacks[i];
        if (p->kind == ev->kind && p->actor == ev->actor) {
            th->npending_stacks = (uint8_t)i;
            return p->id;
        }
    }
    return -1;
}

bool at__stacks_event(const struct merged *e, const struct name *kind, const char **json,
                      size_t *len)
{
    *json = NULL;
    *len = 0;
    if (is_companion(e->ev, kind)) {
        push_pending(e->thread, e->ev);
        return true;
    }
    if (!e->thread->npending_stacks)
        return false;
    int64_t id = pop_pending(e->thread, e->ev);
    const struct stack_table *s = e->trace->stacks;
    if (id == 0) {
        *json = SKIPPED;
        *len = sizeof SKIPPED - 1;
    } else if (id > 0 && s && (uint64_t)id <= s->nstacks && s->stacks[id - 1].s) {
        *json = s->stacks[id - 1].s;
        *len = s->stacks[id - 1].len;
    }
    return false;
}
