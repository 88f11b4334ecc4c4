/* Writing the shim: the helpers the spec needs, a closure and a trampoline per callback, then
 * one wrapper per function, every one of the same shape:
 *
 *   resolve the real function; [outermost or guard: at_enter]; [closures for wrapped callbacks];
 *   record (before) | record step_begin and make the actor current;
 *   forward;
 *   record (after) | record step_end and restore the current actor; [leave]; return.
 *
 * The output uses only actortrace.h, so it builds against the installed header alone. */
#include <string.h>

#include "at_events.h"
#include "shimgen.h"

static const char *const kind_names[] = {
#define KIND_NAME(name, str) [AT_EV_##name] = "AT_EV_" #name,
    AT_EVENT_LIST(KIND_NAME)
#undef KIND_NAME
};

static const char standalone_resolve[] =
    "/* The next definition of `symbol` after this library. Not at_resolve: RTLD_NEXT is relative\n"
    " * to the library that calls dlsym, and at_resolve's is libactortrace.so, preloaded before\n"
    " * this one, so it would find these wrappers. */\n"
    "static void *shim_resolve(const char *symbol)\n"
    "{\n"
    "    void *real = dlsym(RTLD_NEXT, symbol);\n"
    "    /* The program called a name only this shim defines: there is nothing to forward to. */\n"
    "    if (!real) {\n"
    "        fprintf(stderr, \"actortrace: cannot find %s (%s)\\n\", symbol, dlerror());\n"
    "        abort();\n"
    "    }\n"
    "    return real;\n"
    "}\n"
    "\n"
    "#define SHIM_RESOLVE(real, symbol)                    \\\n"
    "    do {                                              \\\n"
    "        if (AT_UNLIKELY((real) == NULL))              \\\n"
    "            *(void **)&(real) = shim_resolve(symbol); \\\n"
    "    } while (0)\n"
    "\n";

static const char helpers[] =
    "/* The id a path or event kind name was registered under, registered on first use (0 when\n"
    " * the table is full). Races register the same name twice, which gives the same id. */\n"
    "static inline unsigned shim_registered_id(unsigned *id, unsigned (*reg)(const char *),\n"
    "                                          const char *name)\n"
    "{\n"
    "    unsigned value = __atomic_load_n(id, __ATOMIC_RELAXED);\n"
    "    if (AT_UNLIKELY(value == 0)) {\n"
    "        value = reg(name);\n"
    "        __atomic_store_n(id, value, __ATOMIC_RELAXED);\n"
    "    }\n"
    "    return value;\n"
    "}\n"
    "\n"
    "/* Every closure starts so: the magic tells a closure from the program's own pointer. */\n"
    "#define SHIM_CLOSURE_MAGIC 0x6174636c6f737572ULL\n"
    "struct shim_closure {\n"
    "    uint64_t magic;\n"
    "    void *data;              /* the program's pointer, given to the callback */\n"
    "    void (*destroy)(void *); /* the program's destroy function for it, or NULL */\n"
    "};\n"
    "\n"
    "/* The program's pointer behind a runtime's copy that may hold a closure in its place. */\n"
    "static inline uint64_t shim_unwrap(uint64_t pointer)\n"
    "{\n"
    "    const struct shim_closure *c = (const struct shim_closure *)(uintptr_t)pointer;\n"
    "    return c && c->magic == SHIM_CLOSURE_MAGIC ? (uint64_t)(uintptr_t)c->data : pointer;\n"
    "}\n";

static const char shim_destroy[] =
    "\n/* Given to the runtime in place of the program's destroy function: the program's gets its\n"
    " * own pointer, and the closure, no longer used by the runtime, is freed. */\n"
    "static void shim_destroy(void *closure)\n"
    "{\n"
    "    struct shim_closure *c = closure;\n"
    "    if (c->destroy)\n"
    "        c->destroy(c->data);\n"
    "    free(c);\n"
    "}\n";

static const char keyed_callbacks[] =
    "\n/* Callbacks found by a pointer the runtime gives back to them (libuv's handle): the "
    "program's\n"
    " * function for each pointer, in a table of SHIM_KEYS slots per callback. A pointer given "
    "again\n"
    " * takes its slot back; past SHIM_KEYS pointers, callbacks go through unwrapped, untraced. "
    "*/\n"
    "#define SHIM_KEYS 65536\n"
    "#define SHIM_KEY_PROBES 64\n"
    "struct shim_key {\n"
    "    uintptr_t key;\n"
    "    void *fn;\n"
    "};\n"
    "\n"
    "/* The slot of `key`, claimed for it when `claim`; NULL when it has none (or none is free). "
    "*/\n"
    "static struct shim_key *shim_key_slot(struct shim_key *table, uintptr_t key, int claim)\n"
    "{\n"
    "    uint64_t hash = ((uint64_t)key * 0x9e3779b97f4a7c15ULL) >> 48;\n"
    "    for (uint64_t i = 0; i < SHIM_KEY_PROBES; i++) {\n"
    "        struct shim_key *slot = &table[(hash + i) % SHIM_KEYS];\n"
    "        uintptr_t seen = __atomic_load_n(&slot->key, __ATOMIC_ACQUIRE);\n"
    "        if (seen == 0 && claim &&\n"
    "            __atomic_compare_exchange_n(&slot->key, &seen, key, 0, __ATOMIC_ACQ_REL,\n"
    "                                        __ATOMIC_ACQUIRE))\n"
    "            return slot;\n"
    "        if (seen == key)\n"
    "            return slot;\n"
    "        if (seen == 0)\n"
    "            return NULL;\n"
    "    }\n"
    "    return NULL;\n"
    "}\n"
    "\n"
    "/* Keeps `fn` for `key`; 0 when the table is full (said once). */\n"
    "static int shim_key_put(struct shim_key *table, const void *key, void *fn)\n"
    "{\n"
    "    static int said;\n"
    "    struct shim_key *slot = shim_key_slot(table, (uintptr_t)key, 1);\n"
    "    if (slot)\n"
    "        __atomic_store_n(&slot->fn, fn, __ATOMIC_RELEASE);\n"
    "    else if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))\n"
    "        fprintf(stderr, \"actortrace: a shim's callback was given more pointers than it "
    "keeps: \"\n"
    "                        \"the rest are not traced\\n\");\n"
    "    return slot != NULL;\n"
    "}\n"
    "\n"
    "/* The program's function kept for `key`. The trampoline was given with it, so there is one:\n"
    " * none means the spec's key is not the pointer the runtime gives back. */\n"
    "static void *shim_key_get(struct shim_key *table, const void *key, const char *callback)\n"
    "{\n"
    "    struct shim_key *slot = shim_key_slot(table, (uintptr_t)key, 0);\n"
    "    void *fn = slot ? __atomic_load_n(&slot->fn, __ATOMIC_ACQUIRE) : NULL;\n"
    "    if (!fn) {\n"
    "        fprintf(stderr, \"actortrace: callback %s: no function kept for %p (the spec's "
    "key)\\n\",\n"
    "                callback, key);\n"
    "        abort();\n"
    "    }\n"
    "    return fn;\n"
    "}\n";

/* shim_read_u8 ... shim_read_u64, written out so that a search finds each one. */
static void emit_reads(FILE *out)
{
    fputs("\n/* The integer of each size at byte `offset` of the struct at address `base`; 0 when "
          "base\n * is 0, so a NULL argument reads as 0 instead of faulting. */\n",
          out);
    for (int bits = 8; bits <= 64; bits *= 2)
        fprintf(out,
                "%sstatic inline uint64_t shim_read_u%d(uint64_t base, uint64_t offset)\n{\n"
                "    uint%d_t value = 0;\n    if (base)\n"
                "        memcpy(&value, (const char *)(uintptr_t)base + offset, sizeof value);\n"
                "    return value;\n}\n",
                bits > 8 ? "\n" : "", bits, bits);
}

static const char string_names[] =
    "\n/* Message names given as strings: the id is the string's FNV-1a hash with the top bit set\n"
    " * (apart from the runtime's own small ids), named with at_name_msg the first time it is\n"
    " * seen. Past SHIM_NAMES distinct names, ids are recorded without their name. */\n"
    "#define SHIM_NAMES 4096\n"
    "static uint32_t shim_names_seen[SHIM_NAMES];\n"
    "\n"
    "static uint32_t shim_name_of_string(const char *name)\n"
    "{\n"
    "    if (!name)\n"
    "        return 0;\n"
    "    uint32_t id = 2166136261u;\n"
    "    for (const char *c = name; *c; c++)\n"
    "        id = (id ^ (uint8_t)*c) * 16777619u;\n"
    "    id |= 0x80000000u;\n"
    "    for (uint32_t i = 0; i < SHIM_NAMES; i++) {\n"
    "        uint32_t *slot = &shim_names_seen[(id + i) % SHIM_NAMES];\n"
    "        uint32_t seen = __atomic_load_n(slot, __ATOMIC_RELAXED);\n"
    "        if (seen == 0 && __atomic_compare_exchange_n(slot, &seen, id, 0, __ATOMIC_RELAXED,\n"
    "                                                     __ATOMIC_RELAXED)) {\n"
    "            at_name_msg(id, name);\n"
    "            return id;\n"
    "        }\n"
    "        if (seen == id)\n"
    "            return id;\n"
    "    }\n"
    "    return id;\n"
    "}\n";

static const char formatted_names[] =
    "\n/* Names formatted from a number are made the first time each id is seen: the ids named so\n"
    " * far, in a table of SHIM_FORMATTED per kind; past that, an id is named at each event. */\n"
    "#define SHIM_FORMATTED 4096\n"
    "\n"
    "/* 1 the first time `id` is seen (and whenever the table is full), else 0. */\n"
    "static int shim_first_name(uint64_t *table, uint64_t id)\n"
    "{\n"
    "    uint64_t key = id + 1; /* 0 marks a free slot */\n"
    "    uint64_t hash = (key * 0x9e3779b97f4a7c15ULL) >> 52;\n"
    "    for (uint64_t i = 0; key && i < SHIM_FORMATTED; i++) {\n"
    "        uint64_t *slot = &table[(hash + i) % SHIM_FORMATTED];\n"
    "        uint64_t seen = __atomic_load_n(slot, __ATOMIC_RELAXED);\n"
    "        if (seen == 0 && __atomic_compare_exchange_n(slot, &seen, key, 0, __ATOMIC_RELAXED,\n"
    "                                                     __ATOMIC_RELAXED))\n"
    "            return 1;\n"
    "        if (seen == key)\n"
    "            return 0;\n"
    "    }\n"
    "    return 1;\n"
    "}\n";

static const char stamps[] =
    "\n/* A stamp one event keeps for another of the same exchange, recorded by another wrapper\n"
    " * call on this thread (at_timestamp_after); msg: the kept event's message, for a stamp kept\n"
    " * after a call. */\n"
    "struct shim_stamp {\n"
    "    uint64_t msg;\n"
    "    struct at_stamp stamp;\n"
    "};\n";

/* The C name stem of a block's statics: the symbol, or trampoline_NAME for a callback. */
static char *stem(const struct block *b)
{
    if (b->is_after_half)
        return xprintf("%s_after", b->symbol);
    return b->is_callback ? xprintf("trampoline_%s", b->symbol) : xstrdup(b->symbol);
}

/* "TYPE NAME" for a declaration: "void *data", "int count". */
static char *declare(const char *type, const char *name)
{
    size_t n = strlen(type);
    return xprintf("%s%s%s", type, n && type[n - 1] == '*' ? "" : " ", name);
}

/* The parameter types, for a function pointer: "(const char *, void *)". */
static char *param_types(const struct proto *p)
{
    char *list = xstrdup(p->nparams ? "" : "void");
    for (int i = 0; i < p->nparams; i++)
        list = xprintf("%s%s%s", list, i ? ", " : "", p->params[i].type);
    return xprintf("(%s)", list);
}

/* A pointer to functions of this prototype, declared as `name`. */
static char *fn_pointer(const struct proto *p, const char *name)
{
    size_t n = strlen(p->ret);
    return xprintf("%s%s(*%s)%s", p->ret, p->ret[n - 1] == '*' ? "" : " ", name, param_types(p));
}

static void emit_c_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++)
        fprintf(out, strchr("\\\"", *s) ? "\\%c" : "%c", *s);
    fputc('"', out);
}

static void emit_tables(const struct spec *spec, FILE *out)
{
    for (int i = 0; i < spec->ntables; i++) {
        const struct table *t = spec->tables[i];
        fprintf(out, "\n/* The message names of table %s, named once. */\n", t->name);
        fprintf(out, "static void name_table_%s(void)\n{\n    static int named;\n", t->name);
        fprintf(out, "    if (AT_LIKELY(__atomic_load_n(&named, __ATOMIC_RELAXED)) ||\n"
                     "        __atomic_exchange_n(&named, 1, __ATOMIC_RELAXED))\n"
                     "        return;\n");
        for (int j = 0; j < t->n; j++) {
            fprintf(out, "    at_name_msg(%lu, ", t->ids[j]);
            emit_c_string(out, t->names[j]);
            fputs(");\n", out);
        }
        fputs("}\n", out);
    }
}

/* `fn(args...);` on one line when it fits in 100 columns, else one argument a line. */
static void emit_call_args(FILE *out, const char *pad, const char *fn, char *const *args, int n)
{
    size_t width = strlen(pad) + strlen(fn) + 3;
    for (int i = 0; i < n; i++)
        width += strlen(args[i]) + 2;
    fprintf(out, "%s%s(", pad, fn);
    for (int i = 0; i < n; i++) {
        if (i && width <= 100)
            fputs(", ", out);
        else if (i)
            fprintf(out, ",\n%s%*s", pad, (int)strlen(fn) + 1, "");
        fputs(args[i], out);
    }
    fputs(");\n", out);
}

/* The record statement: at_record and the name registrations, under the block's condition.
 * `v` holds the actor, peer, msg and name values (expressions, or locals for step). */
/* The timestamp of an event that keeps or shares a stamp, as local `tsc`. */
static void emit_stamp_time(FILE *out, const struct block *b, const char *pad, const char *tsc,
                            char *const v[4])
{
    const struct block *keeper = b->stamp_keeper;
    if (b->stamp_keeps)
        fprintf(out, "%suint64_t %s = at_timestamp();\n", pad, tsc);
    else if (keeper->after) /* kept by the event of one message: shared by that message's */
        fprintf(out,
                "%suint64_t %s = %s == stamp_%s.msg ? at_timestamp_after(stamp_%s.stamp) : "
                "at_timestamp();\n",
                pad, tsc, v[2], b->stamp_name, b->stamp_name);
    else
        fprintf(out, "%suint64_t %s = at_timestamp_after(stamp_%s.stamp);\n", pad, tsc,
                b->stamp_name);
}

/* A stamp kept: after the call until the next, with its message; before it, during the call
 * (emit_call puts the outer one back). */
static void emit_stamp_keep(FILE *out, const struct block *b, const char *pad, const char *tsc,
                            char *const v[4])
{
    if (b->after)
        fprintf(out, "%sstamp_%s = (struct shim_stamp){%s, at_stamp_of(%s)};\n", pad, b->stamp_name,
                v[2], tsc);
    else
        fprintf(out, "%sstamp_%s.stamp = at_stamp_of(%s);\n", pad, b->stamp_name, tsc);
}

/* The name registrations of a block: the formatted ones the first time their id is seen. */
static void emit_registers(FILE *out, const struct spec *spec, const struct block *b,
                           const char *pad)
{
    for (int i = 0; i < b->nregisters; i++) {
        const char *kind = b->reg_actor[i] ? "actor" : "msg";
        if (!b->c_reg_format[i]) {
            fprintf(out, "%sif (%s)\n%s    at_name_%s(%s, %s);\n", pad, b->c_reg_name[i], pad, kind,
                    b->c_reg_id[i], b->c_reg_name[i]);
            continue;
        }
        char *format = xprintf("snprintf(at_formatted, sizeof at_formatted, %s, %s)",
                               b->c_reg_format[i], b->c_reg_format_arg[i]);
        if (spec->npatchable) /* the C library may use the vectors a patched entry left */
            format = xprintf("AT_VECTORS_KEPT(%s)", format);
        fprintf(out,
                "%sif (shim_first_name(shim_formatted_%ss, %s)) {\n"
                "%s    char at_formatted[64];\n%s    %s;\n"
                "%s    at_name_%s(%s, at_formatted);\n%s}\n",
                pad, kind, b->c_reg_id[i], pad, pad, format, pad, kind, b->c_reg_id[i], pad);
    }
}

static void emit_record(FILE *out, const struct spec *spec, const struct block *b, int end,
                        char *const v[4])
{
    char *cond = xstrdup("");
    if (b->outermost)
        cond = xstrdup("at_outer");
    if (b->c_if)
        cond = xprintf("%s%s%s", cond, *cond ? " && " : "", b->c_if);
    const char *pad = *cond ? "        " : "    ";
    if (*cond)
        fprintf(out, "    if (%s) {\n", cond);
    if (b->name_table)
        fprintf(out, "%sname_table_%s();\n", pad, b->name_table);
    if (b->kind != AT_EV_NONE) {
        char *path = b->d_path.line ? xprintf("shim_registered_id(&path_%s, at_path_register, "
                                              "\"%s\")",
                                              stem(b), b->d_path.text)
                                    : xstrdup("0");
        char *kind = b->kind == KIND_CUSTOM ? "at_kind"
                                            : xstrdup(kind_names[end ? AT_EV_STEP_END : b->kind]);
        const char *record_pad = pad, *tsc = b->is_after_half ? "at_tsc_after" : "at_tsc";
        int stamped = b->stamp_name && !end;
        if (stamped)
            emit_stamp_time(out, b, pad, tsc, v);
        if (b->kind == KIND_CUSTOM) { /* kind 0 would mark the slot as never committed */
            fprintf(out,
                    "%sunsigned at_kind = shim_registered_id(&kind_%s, at_event_register, "
                    "\"%s\");\n%sif (at_kind)\n",
                    pad, stem(b), b->custom_kind, pad);
            record_pad = xprintf("%s    ", pad);
        }
        char *args[7] = {stamped ? xprintf("&%s", tsc) : NULL, kind, v[0], v[1], v[2], v[3], path};
        emit_call_args(out, record_pad, stamped ? "at_record_at" : "at_record", args + !stamped,
                       6 + stamped);
        if (stamped && b->stamp_keeps)
            emit_stamp_keep(out, b, pad, tsc, v);
    }
    if (!end)
        emit_registers(out, spec, b, pad);
    if (*cond)
        fputs("    }\n", out);
}

/* The event's values: its expressions, 0 where the spec gives none. */
static void values(const struct block *b, char *v[4])
{
    v[0] = b->c_actor ? b->c_actor : "0";
    v[1] = b->c_peer ? b->c_peer : "0";
    v[2] = b->c_msg ? b->c_msg : "0";
    v[3] = b->c_name ? b->c_name : "0";
}

/* The arguments of the forwarded call: callbacks and their data replaced by the closures. */
static void arguments(const struct block *b, char *args[MAX_PARAMS])
{
    for (int i = 0; i < b->proto.nparams; i++) {
        args[i] = b->proto.params[i].name;
        for (int w = 0; w < b->nwraps; w++) {
            const char *cb = b->wraps[w].callback->symbol;
            if (b->wraps[w].param == i && b->wraps[w].key_param >= 0)
                args[i] = xprintf("at_keyed_%d ? trampoline_%s : %s", w, cb, args[i]);
            else if (b->wraps[w].param == i)
                args[i] = xprintf("at_closure_%d ? trampoline_%s : %s", w, cb, args[i]);
            else if (b->wraps[w].data_param == i)
                args[i] = xprintf("at_closure_%d ? (void *)at_closure_%d : %s", w, w, args[i]);
            else if (b->wraps[w].destroy_param == i)
                args[i] = xprintf("at_closure_%d ? shim_destroy : %s", w, args[i]);
        }
    }
}

/* The body from the first record to the return, around the call `forward`. */
static void emit_call(FILE *out, const struct spec *spec, const struct block *b,
                      const char *forward)
{
    int returns = strcmp(b->proto.ret, "void") != 0, step = b->kind == AT_EV_STEP_BEGIN;
    int resets = step || b->is_callback;
    char *v[4];
    values(b, v);
    if (step) {
        fprintf(out, "    uint64_t at_actor = %s;\n    uint64_t at_peer = %s;\n", v[0], v[1]);
        fprintf(out, "    uint64_t at_msg = %s;\n    uint32_t at_name = %s;\n", v[2], v[3]);
        v[0] = "at_actor", v[1] = "at_peer", v[2] = "at_msg", v[3] = "at_name";
    }
    int keeps_during = b->stamp_keeps && !b->after;
    if (keeps_during) /* a nested call keeps its own, then puts this one back */
        fprintf(out, "    struct shim_stamp at_kept = stamp_%s;\n", b->stamp_name);
    if (step || !b->after)
        emit_record(out, spec, b, 0, v);
    if (step)
        fputs("    uint64_t at_previous = at_set_current_actor(at_actor);\n", out);
    else if (b->c_current)
        fprintf(out, "    uint64_t at_previous = at_set_current_actor(%s);\n", b->c_current);
    resets |= b->c_current != NULL;
    if (resets)
        fputs("    uint32_t at_depth = at_depth_reset();\n", out);
    char *args[MAX_PARAMS];
    arguments(b, args);
    emit_call_args(out, "    ",
                   xprintf("%s%s", returns ? declare(b->proto.ret, "at_result = ") : "", forward),
                   args, b->proto.nparams);
    if (resets)
        fputs("    at_depth_restore(at_depth);\n", out);
    if (keeps_during)
        fprintf(out, "    stamp_%s = at_kept;\n", b->stamp_name);
    if (step || b->c_current)
        fputs("    at_set_current_actor(at_previous);\n", out);
    const struct block *later = b->after_half;
    if (step || b->after || later) {
        fputs("    int at_errno = errno;\n", out);
        if (step || b->after)
            emit_record(out, spec, b, step, v);
        char *lv[4];
        if (later) {
            values(later, lv);
            emit_record(out, spec, later, 0, lv);
        }
        fputs("    errno = at_errno;\n", out);
    }
    if (b->outermost || b->guard || (later && (later->outermost || later->guard)))
        fputs("    at_leave();\n", out);
    if (returns)
        fputs("    return at_result;\n", out);
}

/* The comment above a wrapper: what it records, from which directives. */
static void emit_comment(FILE *out, const struct spec *spec, const struct block *b)
{
    const char *event = b->d_event.text;
    fprintf(out, "\n/* %s:%d: %s%s%s%s. */\n", spec->file, b->line,
            b->kind == AT_EV_NONE ? "no event" : event,
            b->kind == AT_EV_STEP_BEGIN ? " (the actor is current during the call)" : "",
            b->after && b->kind != AT_EV_NONE ? ", recorded after the call" : "",
            b->outermost ? ", outermost call only"
            : b->guard   ? ", the call guarded"
                         : "");
}

static void emit_statics(FILE *out, const struct block *b)
{
    if (b->d_path.line)
        fprintf(out, "static unsigned path_%s;\n", stem(b));
    if (b->kind == KIND_CUSTOM)
        fprintf(out, "static unsigned kind_%s;\n", stem(b));
}

/* "static RET trampoline_NAME(PARAMS) {": the callback's prototype under the trampoline's name. */
static void emit_trampoline_head(FILE *out, const struct proto *p, const char *name)
{
    size_t n = strlen(p->ret);
    fprintf(out, "static %s%strampoline_%s%s\n{\n", p->ret, p->ret[n - 1] == '*' ? "" : " ", name,
            strchr(p->text + n, '('));
}

/* A callback found by its key: its table and trampoline. */
static void emit_keyed_callback(FILE *out, const struct spec *spec, const struct block *b)
{
    const struct proto *p = &b->proto;
    const char *name = b->symbol, *key = p->params[b->key_param].name;
    fprintf(out,
            "\n/* Callback %s travels through the runtime as trampoline_%s, which finds the "
            "program's\n * function by its %s. */\n",
            name, name, key);
    fprintf(out, "static struct shim_key keys_%s[SHIM_KEYS];\n", name);
    emit_statics(out, b);
    emit_comment(out, spec, b);
    emit_trampoline_head(out, p, name);
    fprintf(out, "    %s = (%s)shim_key_get(keys_%s, %s, \"%s\");\n", fn_pointer(p, "at_fn"),
            fn_pointer(p, ""), name, key, name);
    emit_call(out, spec, b, "at_fn");
    fputs("}\n", out);
}

/* A callback's closure (the original function and data), its constructor and trampoline. */
static void emit_callback(FILE *out, const struct spec *spec, const struct block *b)
{
    if (b->key_param >= 0) {
        emit_keyed_callback(out, spec, b);
        return;
    }
    const struct proto *p = &b->proto;
    const struct param *data = &p->params[b->data_param];
    const char *name = b->symbol;
    fprintf(out,
            "\n/* Callback %s travels through the runtime as trampoline_%s, with a closure "
            "in\n * place of its %s. */\n",
            name, name, data->name);
    fprintf(out, "struct closure_%s {\n    struct shim_closure head;\n    %s;\n};\n", name,
            fn_pointer(p, "fn"));
    fprintf(out, "\n/* NULL when there is no callback, or no memory: the call then goes through "
                 "as it is. */\n");
    fprintf(out,
            "static struct closure_%s *closure_%s(%s, void *data, void (*destroy)(void *))\n{\n",
            name, name, fn_pointer(p, "fn"));
    fprintf(out, "    struct closure_%s *closure = fn ? malloc(sizeof *closure) : NULL;\n", name);
    fprintf(out,
            "    if (closure)\n        *closure = (struct closure_%s){{SHIM_CLOSURE_MAGIC, data, "
            "destroy}, fn};\n",
            name);
    fputs("    return closure;\n}\n", out);
    emit_statics(out, b);
    emit_comment(out, spec, b);
    emit_trampoline_head(out, p, name);
    fprintf(out, "    struct closure_%s *at_closure = (struct closure_%s *)(void *)%s;\n", name,
            name, data->name);
    fprintf(out, "    %s = at_closure->head.data;\n", data->name);
    emit_call(out, spec, b, "at_closure->fn");
    fputs("}\n", out);
}

static void emit_function(FILE *out, const struct spec *spec, const struct block *b)
{
    const char *name = b->symbol;
    if (!spec->linked) /* linked: declared before the shim's table (emit_linked_table) */
        fprintf(out, "\nstatic %s;\n", fn_pointer(&b->proto, xprintf("real_%s", name)));
    emit_statics(out, b);
    if (b->after_half)
        emit_statics(out, b->after_half);
    emit_comment(out, spec, b);
    if (b->after_half)
        emit_comment(out, spec, b->after_half);
    fprintf(out, "AT_EXPORT %s\n{\n", b->proto.text);
    if (spec->linked)
        fprintf(out, "    AT_SHIM_RESOLVE(&shim, real_%s);\n", name);
    else
        fprintf(out, "    SHIM_RESOLVE(real_%s, \"%s\");\n", name, name);
    if (b->outermost || (b->after_half && b->after_half->outermost))
        fputs("    int at_outer = at_enter();\n", out);
    else if (b->guard || (b->after_half && b->after_half->guard))
        fputs("    at_enter(); /* guard: lower layers record nothing during the call */\n", out);
    for (int w = 0; w < b->nwraps; w++) {
        const char *cb = b->wraps[w].callback->symbol;
        int destroy = b->wraps[w].destroy_param;
        const char *fn = b->proto.params[b->wraps[w].param].name;
        if (b->wraps[w].key_param >= 0) {
            fprintf(out, "    int at_keyed_%d = %s%s%s && shim_key_put(keys_%s, %s, (void *)%s);\n",
                    w, b->wraps[w].c_if ? b->wraps[w].c_if : "", b->wraps[w].c_if ? " && " : "", fn,
                    cb, b->proto.params[b->wraps[w].key_param].name, fn);
            continue;
        }
        char *make = xprintf("closure_%s(%s, (void *)%s, %s)", cb, fn,
                             b->proto.params[b->wraps[w].data_param].name,
                             destroy < 0 ? "NULL" : b->proto.params[destroy].name);
        if (b->wraps[w].c_if)
            make = xprintf("%s ? %s : NULL", b->wraps[w].c_if, make);
        fprintf(out, "    struct closure_%s *at_closure_%d = %s;\n", cb, w, make);
    }
    emit_call(out, spec, b, xprintf("real_%s", name));
    fputs("}\n", out);
}

static void emit_head(const struct spec *spec, FILE *out)
{
    fprintf(out,
            "/* The actortrace shim of %s, generated by shimgen from %s:\n * edit the spec, "
            "not this file.\n *\n * Wrapped:",
            spec->runtime.text, spec->file);
    int column = 12;
    const char *sep = " ";
    for (int i = 0; i < spec->nblocks; i++) {
        const struct block *b = spec->blocks[i];
        if (b->is_callback)
            continue;
        char *item = xprintf("%s (%s)", b->symbol, b->d_event.text);
        column += (int)(strlen(sep) + strlen(item));
        if (column > 96) {
            fprintf(out, "%s\n *", sep[0] == ',' ? "," : "");
            sep = " ";
            column = 3 + (int)strlen(item);
        }
        fprintf(out, "%s%s", sep, item);
        sep = ", ";
    }
    fputc('.', out);
    if (spec->linked)
        fputs("\n * Compiled into the library (shimgen --linked), with its other shims.", out);
    fputs(" */\n", out);
    if (spec->npatchable)
        fputs("/* The wrappers may run behind patched entries, which save no vector register: "
              "general\n * registers only, before any header's inline functions "
              "(include/at_vectors.h). */\n#pragma GCC target(\"general-regs-only\")\n",
              out);
    fputs("#include <dlfcn.h>\n#include <errno.h>\n#include <stdint.h>\n#include <stdio.h>\n"
          "#include <stdlib.h>\n#include <string.h>\n\n#include \"actortrace.h\"\n",
          out);
    if (spec->linked)
        fprintf(out, "%s#include \"support.h\"\n",
                spec->npatchable ? "#include \"at_vectors.h\"\n" : "");
    for (int i = 0; i < spec->nincludes; i++)
        fprintf(out, "#include %s\n", spec->includes[i].text);
    if (spec->nweak)
        fputs("\n/* Named by expressions; weak, so that the shim loads where the runtime is not. "
              "*/\n",
              out);
    for (int i = 0; i < spec->nweak; i++)
        fprintf(out, "#pragma weak %s\n", spec->weak[i]);
    fputc('\n', out);
}

/* A linked shim's real functions, resolved by shim/support.c, and its patchable wrappers. */
static void emit_linked_table(const struct spec *spec, FILE *out)
{
    fputc('\n', out);
    for (int i = 0; i < spec->nblocks; i++)
        if (!spec->blocks[i]->is_callback && !spec->blocks[i]->is_after_half)
            fprintf(
                out, "static %s;\n",
                fn_pointer(&spec->blocks[i]->proto, xprintf("real_%s", spec->blocks[i]->symbol)));
    fputs("\nstatic struct at_shim shim = {\n    .reals = AT_SHIM_REALS(", out);
    const char *sep = "";
    for (int i = 0; i < spec->nblocks; i++)
        if (!spec->blocks[i]->is_callback && !spec->blocks[i]->is_after_half) {
            fprintf(out, "%sAT_SHIM_REAL(%s)", sep, spec->blocks[i]->symbol);
            sep = ",\n                           ";
        }
    fprintf(out, "),\n    .runtime = \"%s\",\n};\n", spec->runtime.text);
    if (!spec->npatchable)
        return;
    fputs("\n/* Wrappers that may also stand in for a patched entry (the runtime linked into the "
          "program,\n * or calling its own functions directly). */\nAT_PATCH_TABLE(",
          out);
    sep = "";
    for (int i = 0; i < spec->nblocks; i++)
        if (spec->blocks[i]->c_patchable) {
            fprintf(out, "%sAT_PATCHABLE(%s, %s)", sep, spec->blocks[i]->symbol,
                    spec->blocks[i]->c_patchable);
            sep = ",\n               ";
        }
    fputs(");\n", out);
}

/* A constructor that says once which wrapped names no library defines. */
static void emit_name_check(const struct spec *spec, FILE *out)
{
    fputs("\n/* Says once, at start-up, which wrapped names no library loaded after this one "
          "defines:\n"
          " * their wrappers never run. Quiet in a process that has none of them (a shell that\n"
          " * starts the program), which is not a program of this runtime. */\n"
          "__attribute__((constructor)) static void shim_check_names(void)\n{\n"
          "    static const char *const names[] = {",
          out);
    for (int i = 0; i < spec->nblocks; i++)
        if (!spec->blocks[i]->is_callback && !spec->blocks[i]->is_after_half)
            fprintf(out, "\"%s\", ", spec->blocks[i]->symbol);
    fprintf(out,
            "NULL};\n"
            "    char missing[1024] = \"\";\n"
            "    int found = 0;\n"
            "    for (const char *const *name = names; *name; name++) {\n"
            "        if (dlsym(RTLD_NEXT, *name))\n"
            "            found++;\n"
            "        else if (strlen(missing) + strlen(*name) + 2 < sizeof missing)\n"
            "            strcat(strcat(missing, \" \"), *name);\n"
            "    }\n"
            "    if (found && missing[0])\n"
            "        fprintf(stderr, \"actortrace: shim %s: defined by no loaded library, never "
            "traced:%%s\\n\",\n"
            "                missing);\n}\n",
            spec->runtime.text);
}

/* The thread's stamp of each name a block keeps. */
static void emit_stamp_statics(const struct spec *spec, FILE *out)
{
    int any = 0;
    for (int i = 0; i < spec->nblocks; i++)
        any |= spec->blocks[i]->stamp_keeps;
    if (any)
        fputs(stamps, out);
    for (int i = 0; i < spec->nblocks; i++)
        if (spec->blocks[i]->stamp_keeps)
            fprintf(out, "static __thread struct shim_stamp stamp_%s;\n",
                    spec->blocks[i]->stamp_name);
}

int emit_shim(const struct spec *spec, FILE *out)
{
    int strings = 0, destroys = 0, keyed = 0, formatted = 0;
    for (int i = 0; i < spec->nblocks; i++) {
        strings |= spec->blocks[i]->uses_string_names;
        formatted |= spec->blocks[i]->uses_formatted_names;
        keyed |= spec->blocks[i]->is_callback && spec->blocks[i]->key_param >= 0;
        for (int w = 0; w < spec->blocks[i]->nwraps; w++)
            destroys |= spec->blocks[i]->wraps[w].destroy_param >= 0;
    }
    emit_head(spec, out);
    if (!spec->linked)
        fputs(standalone_resolve, out);
    fputs(helpers, out);
    emit_reads(out);
    if (strings)
        fputs(string_names, out);
    if (destroys)
        fputs(shim_destroy, out);
    if (keyed)
        fputs(keyed_callbacks, out);
    if (formatted)
        fputs(formatted_names, out);
    if (formatted & FORMATTED_ACTORS)
        fputs("static uint64_t shim_formatted_actors[SHIM_FORMATTED];\n", out);
    if (formatted & FORMATTED_MSGS)
        fputs("static uint64_t shim_formatted_msgs[SHIM_FORMATTED];\n", out);
    emit_tables(spec, out);
    emit_stamp_statics(spec, out);
    if (spec->linked)
        emit_linked_table(spec, out);
    for (int i = 0; i < spec->nblocks; i++)
        if (spec->blocks[i]->is_callback)
            emit_callback(out, spec, spec->blocks[i]);
    for (int i = 0; i < spec->nblocks; i++)
        if (!spec->blocks[i]->is_callback && !spec->blocks[i]->is_after_half)
            emit_function(out, spec, spec->blocks[i]);
    if (!spec->linked) { /* the library checks its own shims' names, and is no generated shim */
        emit_name_check(spec, out);
        fputs("\n/* What actortrace list looks for to tell a generated shim. */\n"
              "AT_EXPORT const int actortrace_generated_shim = 1;\n",
              out);
    }
    return ferror(out) ? -1 : 0;
}
