/* Call stacks: the MODULE and STACK records of a trace, each stack kept as its frames and
 * rendered once at load as the JSON array JSONL prints, and the pairing of "stack" companion
 * events with the event they precede (docs/STACKS.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "at_codec.h"
#include "at_events.h"
#include "body.h"
#include "out.h"
#include "stacks.h"
#include "trace.h"

#define IDS_MAX        (1u << 16) /* ids beyond this are refused: the recorder keeps 4096 stacks */
#define FUNC_MAX       512        /* longer function names are cut */
#define FRAME_TEXT_MAX 1024

struct stack {
    char *json; /* NULL: no such stack */
    size_t len;
    struct stack_frame *frames; /* one allocation with their function names */
    uint32_t nframes;
};

struct stack_table {
    struct stack_module *modules; /* by id - 1 */
    size_t nmodules;
    struct stack *stacks; /* by id - 1 */
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

static void module_free(struct stack_module *m)
{
    free(m->path);
    free(m->build_id);
    *m = (struct stack_module){0};
}

/* id, path, build-id, then (when present) whether the module is a runtime's library. */
static int on_module(struct stack_table *s, struct body *b)
{
    uint64_t id = at__body_num(b);
    size_t len, id_len;
    const char *path = str(b, &len), *build_id = str(b, &id_len);
    bool runtime = b->p < b->end && at__body_num(b) == 1;
    if (b->bad)
        return -EINVAL;
    int err = grow((void **)&s->modules, &s->nmodules, sizeof *s->modules, id);
    if (err < 0)
        return err;
    struct stack_module m = {strndup(path, len), NULL, strndup(build_id, id_len), runtime};
    if (!m.path || !m.build_id) {
        module_free(&m);
        return -ENOMEM;
    }
    const char *slash = strrchr(m.path, '/');
    m.base = slash ? slash + 1 : m.path;
    module_free(&s->modules[id - 1]);
    s->modules[id - 1] = m;
    return 0;
}

/* One frame as text: "func+0x1a (module)", "0x1234 (module)" without a function, "0x1234"
 * outside any module. */
static size_t frame_text(const struct stack_table *s, const struct stack_frame *f, char *out)
{
    const struct stack_module *mod =
        f->module && f->module <= s->nmodules ? &s->modules[f->module - 1] : NULL;
    int n;
    if (f->func_len)
        n = snprintf(out, FRAME_TEXT_MAX, "%.*s+0x%llx", (int)f->func_len, f->func,
                     (unsigned long long)f->offset);
    else
        n = snprintf(out, FRAME_TEXT_MAX, "0x%llx", (unsigned long long)f->addr);
    n = n < FRAME_TEXT_MAX ? n : FRAME_TEXT_MAX - 1;
    if (mod && mod->path)
        n += snprintf(out + n, FRAME_TEXT_MAX - (size_t)n, " (%s)", mod->base);
    else if (f->module)
        n += snprintf(out + n, FRAME_TEXT_MAX - (size_t)n, " (module %u)", f->module);
    return n < FRAME_TEXT_MAX ? (size_t)n : FRAME_TEXT_MAX - 1;
}

/* Reads the frames of a STACK record into one allocation: the frames, then their names. */
static struct stack_frame *read_frames(struct body *b, uint32_t n)
{
    struct stack_frame *frames = malloc(n * (sizeof *frames + FUNC_MAX) + 1);
    if (!frames)
        return NULL;
    char *names = (char *)(frames + n);
    for (uint32_t i = 0; i < n && !b->bad; i++) {
        struct stack_frame *f = &frames[i];
        uint64_t module = at__body_num(b);
        f->addr = at__body_num(b);
        size_t len;
        const char *func = str(b, &len);
        f->offset = at__body_num(b);
        f->module = module <= IDS_MAX ? (uint32_t)module : 0;
        f->func_len = (uint32_t)(len < FUNC_MAX ? len : FUNC_MAX);
        f->func = memcpy(names, func, f->func_len);
        names += f->func_len;
    }
    return frames;
}

/* The JSON array of a stack's frames as text. */
static char *render(const struct stack_table *s, const struct stack *st, size_t *len)
{
    char *json = malloc(2 + st->nframes * (1 + at__json_str_bound(FRAME_TEXT_MAX)));
    if (!json)
        return NULL;
    char *p = json, text[FRAME_TEXT_MAX];
    *p++ = '[';
    for (uint32_t i = 0; i < st->nframes; i++) {
        size_t n = frame_text(s, &st->frames[i], text);
        if (i)
            *p++ = ',';
        p = at__fmt_json_str(p, text, n);
    }
    *p++ = ']';
    *len = (size_t)(p - json);
    return json;
}

static int on_stack(struct stack_table *s, struct body *b)
{
    uint64_t id = at__body_num(b), n = at__body_num(b);
    if (b->bad || n > AT_STACK_FRAMES_MAX)
        return -EINVAL;
    int err = grow((void **)&s->stacks, &s->nstacks, sizeof *s->stacks, id);
    if (err < 0)
        return err;
    struct stack st = {.frames = read_frames(b, (uint32_t)n), .nframes = (uint32_t)n};
    if (st.frames && !b->bad)
        st.json = render(s, &st, &st.len);
    if (!st.json) {
        free(st.frames);
        return b->bad ? -EINVAL : -ENOMEM;
    }
    free(s->stacks[id - 1].json);
    free(s->stacks[id - 1].frames);
    s->stacks[id - 1] = st;
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
        module_free(&s->modules[i]);
    for (size_t i = 0; i < s->nstacks; i++) {
        free(s->stacks[i].json);
        free(s->stacks[i].frames);
    }
    free(s->modules);
    free(s->stacks);
    free(s);
}

static const struct stack *stack_of(const struct trace *t, uint32_t id)
{
    const struct stack_table *s = t->stacks;
    if (!s || id == 0 || id > s->nstacks || !s->stacks[id - 1].json)
        return NULL;
    return &s->stacks[id - 1];
}

const struct stack_frame *at__stacks_frames(const struct trace *t, uint32_t id, uint32_t *n)
{
    const struct stack *st = stack_of(t, id);
    *n = st ? st->nframes : 0;
    return st ? st->frames : NULL;
}

const struct stack_module *at__stacks_module(const struct trace *t, uint32_t id)
{
    const struct stack_table *s = t->stacks;
    if (!s || id == 0 || id > s->nmodules || !s->modules[id - 1].path)
        return NULL;
    return &s->modules[id - 1];
}

const struct stack_frame *at__stacks_caller(const struct trace *t, uint32_t id)
{
    uint32_t n;
    const struct stack_frame *f = at__stacks_frames(t, id, &n);
    for (uint32_t i = 0; i < n; i++) {
        const struct stack_module *m = at__stacks_module(t, f[i].module);
        if (!m || !m->runtime)
            return &f[i];
    }
    return n ? &f[0] : NULL;
}

/* What an event whose capture the recorder skipped shows. */
static const char SKIPPED[] = "null,\"stack_skipped\":true";

const char *at__stacks_json(const struct trace *t, uint32_t stack, size_t *len)
{
    if (stack == AT_STACK_SKIPPED) {
        *len = sizeof SKIPPED - 1;
        return SKIPPED;
    }
    const struct stack *st = stack ? stack_of(t, stack) : NULL;
    *len = st ? st->len : 0;
    return st ? st->json : NULL;
}

static bool is_companion(const struct merged *e)
{
    if (e->ev->kind < AT_EV_FIRST_REGISTERED)
        return false;
    const struct name *kind = at__names_get(&e->trace->names, AT_NAME_EVENT, e->ev->kind);
    return kind && kind->len == 5 && memcmp(kind->s, "stack", 5) == 0;
}

/* Keeps a companion for its event; the oldest goes when a thread nests deeper than kept. */
static void push_pending(struct thread *th, const struct at_event *ev)
{
    const size_t max = sizeof th->pending_stacks / sizeof th->pending_stacks[0];
    if (th->npending_stacks == max) {
        memmove(th->pending_stacks, th->pending_stacks + 1,
                (max - 1) * sizeof th->pending_stacks[0]);
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

bool at__stacks_pair(struct merged *e)
{
    e->stack = 0;
    if (is_companion(e)) {
        push_pending(e->thread, e->ev);
        return true;
    }
    if (!e->thread->npending_stacks)
        return false;
    int64_t id = pop_pending(e->thread, e->ev);
    if (id >= 0)
        e->stack = id == 0 ? AT_STACK_SKIPPED : (uint32_t)id;
    return false;
}
