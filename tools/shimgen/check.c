/* Validating a spec: every directive of every block is judged, every mistake reported with its
 * line, and what is right is turned into C for emit.c. Nothing is generated from a spec with a
 * mistake anywhere in it. */
#include <ctype.h>
#include <string.h>

#include "at_events.h"
#include "expr.h"

/* The words of `event`, but for step (step_begin and step_end, around the call) and none. */
static const struct {
    const char *word;
    int kind;
} events[] = {
#define EVENT_WORD(name, str) {str, AT_EV_##name},
    AT_EVENT_LIST(EVENT_WORD)
#undef EVENT_WORD
};

static struct block *spec_callback(struct spec *spec, const char *name)
{
    for (int i = 0; i < spec->nblocks; i++)
        if (spec->blocks[i]->is_callback && strcmp(spec->blocks[i]->symbol, name) == 0)
            return spec->blocks[i];
    return NULL;
}

static struct table *spec_table(struct spec *spec, const char *name)
{
    for (int i = 0; i < spec->ntables; i++)
        if (strcmp(spec->tables[i]->name, name) == 0)
            return spec->tables[i];
    return NULL;
}

static int is_word(const char *s, const char *extra)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && !strchr(extra, *s))
            return 0;
    return 1;
}

static void check_event(struct spec *spec, struct block *b)
{
    const char *word = b->d_event.text;
    b->kind = KIND_UNKNOWN;
    if (!b->d_event.line) {
        spec_error(spec, b->line, "%s has no 'event'", b->symbol);
        return;
    }
    if (strncmp(word, "custom ", 7) == 0 && is_word(word + 7, "-.")) {
        b->kind = KIND_CUSTOM;
        b->custom_kind = xstrdup(word + 7);
        return;
    }
    if (strcmp(word, "step") == 0 || strcmp(word, "none") == 0) {
        b->kind = word[0] == 's' ? AT_EV_STEP_BEGIN : AT_EV_NONE;
        return;
    }
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (strcmp(word, events[i].word) == 0 && strncmp(word, "step_", 5) != 0) {
            b->kind = events[i].kind;
            return;
        }
    static const char *const kinds[] = {"spawn", "exit",   "send",  "recv", "step",   "schedule",
                                        "park",  "unpark", "yield", "none", "custom", NULL};
    const char *near = nearest_word(word, kinds);
    spec_error(spec, b->d_event.line,
               "unknown event '%s'%s%s%s: spawn, exit, send, recv, step, schedule, park, unpark, "
               "yield, none, or 'custom NAME'",
               word, near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
}

static void check_at(struct spec *spec, struct block *b)
{
    const struct directive *d = &b->d_at;
    if (!d->line)
        return;
    if (b->kind == AT_EV_STEP_BEGIN)
        spec_error(spec, d->line,
                   "'at' has no meaning for step: step_begin is recorded before "
                   "the call and step_end after it");
    else if (strcmp(d->text, "after") == 0)
        b->after = 1;
    else if (strcmp(d->text, "before") != 0)
        spec_error(spec, d->line, "'at' is 'before' or 'after' (the call), not '%s'", d->text);
}

/* Reports a use of the result where it is not known yet. */
static void check_result_use(struct spec *spec, const struct block *b, int line, int uses_result)
{
    if (!uses_result)
        return;
    if (b->kind == AT_EV_STEP_BEGIN)
        spec_error(spec, line,
                   "step records step_begin before the call: 'result' is not "
                   "known then");
    else if (!b->after)
        spec_error(spec, line, "'result' is known only after the call: add 'at after'");
}

/* One expression directive: its C text, or NULL when absent or wrong (reported). */
static char *value(struct spec *spec, const struct block *b, const struct directive *d,
                   const char *word)
{
    if (!d->line)
        return NULL;
    if (b->kind == AT_EV_NONE) {
        spec_error(spec, d->line, "'%s' has no meaning with event none", word);
        return NULL;
    }
    int uses_result = 0;
    char *c = expr_whole(spec, d->line, &b->proto, d->text, &uses_result);
    if (c)
        check_result_use(spec, b, d->line, uses_result);
    return c;
}

/* A quoted C string, checked to be one literal: its text with the quotes, or NULL. */
static char *literal(const char *text)
{
    size_t n = strlen(text);
    if (n < 2 || text[0] != '"' || text[n - 1] != '"')
        return NULL;
    for (size_t i = 1; i < n - 1; i++) {
        if (text[i] == '\\' && i + 1 < n - 1 && strchr("\\\"nt", text[i + 1]))
            i++;
        else if (text[i] == '"' || text[i] == '\\' || !isprint((unsigned char)text[i]))
            return NULL;
    }
    return xstrdup(text);
}

/* A string from an expression's value: a char pointer argument as it is. */
static char *string_value(const char *c)
{
    if (strncmp(c, "(uintptr_t)", 11) == 0 && is_word(c + 11, ""))
        return xprintf("(const char *)%s", c + 11);
    return xprintf("(const char *)(uintptr_t)%s", c);
}

/* name "CONST" | name string EXPR | name EXPR [table TABLE] */
static void check_name(struct spec *spec, struct block *b)
{
    const struct directive *d = &b->d_name;
    int uses_result = 0;
    if (!d->line || b->kind == AT_EV_NONE) {
        value(spec, b, d, "name");
        return;
    }
    if (d->text[0] == '"') {
        char *c = literal(d->text);
        if (!c)
            spec_error(spec, d->line,
                       "a message name is one string in double quotes, with "
                       "\\\\ \\\" \\n \\t as the only escapes");
        b->c_name = c ? xprintf("shim_name_of_string(%s)", c) : NULL;
        b->uses_string_names = 1;
        return;
    }
    if (strncmp(d->text, "string ", 7) == 0) {
        char *c = expr_whole(spec, d->line, &b->proto, d->text + 7, &uses_result);
        b->c_name = c ? xprintf("shim_name_of_string(%s)", string_value(c)) : NULL;
        b->uses_string_names = 1;
        check_result_use(spec, b, d->line, uses_result);
        return;
    }
    struct expr_cx cx = expr_start(spec, d->line, &b->proto, d->text);
    char *c = expr_parse(&cx);
    if (!c)
        return;
    while (isspace((unsigned char)*cx.pos))
        cx.pos++;
    if (strncmp(cx.pos, "table ", 6) == 0) {
        b->name_table = xstrdup(cx.pos + 6);
        if (!spec_table(spec, b->name_table))
            spec_error(spec, d->line, "no table named '%s'", b->name_table);
    } else if (*cx.pos) {
        spec_error(spec, d->line,
                   "unexpected '%s' after the message-name id (a table is named "
                   "with 'table NAME')",
                   cx.pos);
    }
    b->c_name = xprintf("(uint32_t)%s", c);
    check_result_use(spec, b, d->line, cx.uses_result);
}

/* The offset of a format's one conversion (d, u or x, after its %), or -1 when the format has
 * none, more than one, or another kind. %% is a percent sign. */
static int format_conversion(const char *format)
{
    int at = -1;
    for (const char *c = format; *c; c++) {
        if (*c != '%')
            continue;
        if (c[1] == '%') {
            c++;
            continue;
        }
        if (at >= 0 || !c[1] || !strchr("dux", c[1]))
            return -1;
        at = (int)(c + 1 - format);
    }
    return at;
}

/* register msg|actor ID format "FMT" EXPR: the name is FMT with EXPR's value, made the first
 * time the id is seen (formatting costs more than the event it names). */
static void check_register_format(struct spec *spec, struct block *b, int i, const char *text)
{
    const struct directive *d = &b->d_register[i];
    const char *end = text + 1;
    while (*end && *end != '"')
        end += *end == '\\' && end[1] ? 2 : 1;
    char *format = *end ? literal(xprintf("%.*s", (int)(end + 1 - text), text)) : NULL;
    int conversion = format ? format_conversion(format) : -1;
    if (conversion < 0) {
        spec_error(spec, d->line,
                   "a name format is one string in double quotes with one %%d, %%u or %%x, "
                   "then the number's expression: format \"worker-%%d\" worker");
        return;
    }
    int uses_result = 0;
    char *arg = expr_whole(spec, d->line, &b->proto, end + 1, &uses_result);
    if (!arg)
        return;
    check_result_use(spec, b, d->line, uses_result);
    /* the argument is 64 bits wide: %d becomes %lld */
    b->c_reg_format[i] = xprintf("%.*sll%s", conversion, format, format + conversion);
    b->c_reg_format_arg[i] =
        xprintf("(%s)%s", format[conversion] == 'd' ? "long long" : "unsigned long long", arg);
    b->c_reg_name[i] = xstrdup("at_formatted");
    b->uses_formatted_names |= b->reg_actor[i] ? FORMATTED_ACTORS : FORMATTED_MSGS;
}

/* register msg|actor ID NAME, where NAME is a string expression or "a constant". */
static void check_register(struct spec *spec, struct block *b, int i)
{
    const struct directive *d = &b->d_register[i];
    const char *text = d->text;
    b->reg_actor[i] = strncmp(text, "actor ", 6) == 0;
    if (!b->reg_actor[i] && strncmp(text, "msg ", 4) != 0) {
        spec_error(spec, d->line,
                   "'register' reads 'register msg ID NAME' or "
                   "'register actor ID NAME'");
        return;
    }
    struct expr_cx cx = expr_start(spec, d->line, &b->proto, text + (b->reg_actor[i] ? 6 : 4));
    b->c_reg_id[i] = expr_parse(&cx);
    if (!b->c_reg_id[i])
        return;
    while (isspace((unsigned char)*cx.pos))
        cx.pos++;
    if (!*cx.pos) {
        spec_error(spec, d->line, "'register' needs a name after the id");
        return;
    }
    if (strncmp(cx.pos, "format \"", 8) == 0) {
        check_register_format(spec, b, i, cx.pos + 7);
        return;
    }
    char *name = *cx.pos == '"' ? literal(cx.pos)
                                : expr_whole(spec, d->line, &b->proto, cx.pos, &cx.uses_result);
    if (!name && *cx.pos == '"')
        spec_error(spec, d->line, "a name is one string in double quotes");
    else if (name && *cx.pos != '"')
        name = string_value(name);
    b->c_reg_name[i] = name;
    check_result_use(spec, b, d->line, cx.uses_result);
}

static int param_index(const struct proto *proto, const char *name)
{
    for (int i = 0; i < proto->nparams; i++)
        if (strcmp(proto->params[i].name, name) == 0)
            return i;
    return -1;
}

/* A void pointer, const or not: the only type a user-data pointer has. A pointer to anything
 * else (libuv's handle) is the runtime's own object, and a closure in its place is written to
 * by the runtime as if it were that object. */
static int is_void_pointer(const char *type)
{
    if (strncmp(type, "const ", 6) == 0)
        type += 6;
    return strcmp(type, "void *") == 0;
}

/* A parameter that may be a destroy function for data: a GDestroyNotify or void (*)(void *). */
static int looks_like_destroy(const struct param *p)
{
    size_t n = strlen(p->type);
    return strcmp(p->type, "void (*)(void *)") == 0 ||
           (n >= 13 && strcmp(p->type + n - 13, "DestroyNotify") == 0);
}

/* destroy ARG | destroy none, after a wrap: whose destroy function gets the data. */
static void check_destroy(struct spec *spec, struct block *b, int i, const char *word,
                          const char *name)
{
    const struct directive *d = &b->d_wrap[i];
    b->wraps[i].destroy_param = -1;
    if (!*word) {
        for (int p = 0; p < b->proto.nparams; p++)
            if (looks_like_destroy(&b->proto.params[p]))
                spec_error(spec, d->line,
                           "'%s' may be the destroy function of the data: add 'destroy %s' (it "
                           "gets the program's data, then the closure is freed) or 'destroy none'",
                           b->proto.params[p].name, b->proto.params[p].name);
        return;
    }
    if (strcmp(name, "none") == 0)
        return;
    b->wraps[i].destroy_param = param_index(&b->proto, name);
    int p = b->wraps[i].destroy_param;
    if (p < 0 || p == b->wraps[i].param || p == b->wraps[i].data_param)
        spec_error(spec, d->line,
                   "'destroy' names the argument of %s that frees the data, not '%s'", b->symbol,
                   name);
}

/* wrap ARG with CALLBACK key KEY: the callback is found by KEY, a pointer argument the runtime
 * gives back to it (libuv's handle). */
static void check_keyed_wrap(struct spec *spec, struct block *b, int i, const char *key)
{
    const struct directive *d = &b->d_wrap[i];
    b->wraps[i].data_param = b->wraps[i].destroy_param = -1;
    b->wraps[i].key_param = param_index(&b->proto, key);
    if (b->wraps[i].key_param < 0 || !b->proto.params[b->wraps[i].key_param].pointer)
        spec_error(spec, d->line, "'key' names a pointer argument of %s, not '%s'", b->symbol, key);
    else if (!b->wraps[i].callback->d_key.line)
        spec_error(spec, d->line, "callback %s has no 'key': wrap it with 'data'",
                   b->wraps[i].callback->symbol);
}

/* The data argument of a wrap: where the closure rides, in place of the program's pointer. */
static void check_data_wrap(struct spec *spec, struct block *b, int i, const char *user,
                            const char *destroy, const char *dname)
{
    const struct directive *d = &b->d_wrap[i];
    b->wraps[i].data_param = param_index(&b->proto, user);
    if (b->wraps[i].data_param < 0)
        spec_error(spec, d->line, "'%s' is not an argument of %s", user, b->symbol);
    else if (b->wraps[i].callback->d_key.line)
        spec_error(spec, d->line, "callback %s is found by its 'key': wrap it with 'key'",
                   b->wraps[i].callback->symbol);
    else if (b->wraps[i].data_param == b->wraps[i].param)
        spec_error(spec, d->line,
                   "the data argument '%s' must be a pointer other than the "
                   "callback (it carries the callback's closure)",
                   user);
    else if (!is_void_pointer(b->proto.params[b->wraps[i].data_param].type))
        spec_error(spec, d->line,
                   "the data argument '%s' is '%s', not void *: the closure would take the "
                   "place of the runtime's own object",
                   user, b->proto.params[b->wraps[i].data_param].type);
    else
        check_destroy(spec, b, i, destroy, dname);
}

/* wrap ARG with CALLBACK data DATA [destroy ARG|none] | wrap ARG with CALLBACK key KEY */
static void check_wrap(struct spec *spec, struct block *b, int i)
{
    const struct directive *d = &b->d_wrap[i];
    char arg[64], with[8], name[64], data[8], user[64], destroy[8] = "", dname[64], extra[2];
    char *text = xstrdup(d->text), *cond = strstr(text, " if ");
    int uses_result = 0;
    if (cond) { /* wrap ... if EXPR: only the calls where EXPR is not 0 */
        *cond = '\0';
        b->wraps[i].c_if = expr_whole(spec, d->line, &b->proto, cond + 4, &uses_result);
        if (uses_result)
            spec_error(spec, d->line,
                       "a callback is wrapped before the call: 'result' is not "
                       "known then");
    }
    int n = sscanf(text, "%63s %7s %63s %7s %63s %7s %63s %1s", arg, with, name, data, user,
                   destroy, dname, extra);
    int keyed = n == 5 && strcmp(data, "key") == 0;
    if ((n != 5 && n != 7) || strcmp(with, "with") != 0 || (strcmp(data, "data") != 0 && !keyed) ||
        (n == 7 && strcmp(destroy, "destroy") != 0)) {
        spec_error(spec, d->line,
                   "'wrap' reads 'wrap ARGUMENT with CALLBACK data ARGUMENT [destroy "
                   "ARGUMENT|none] [if EXPR]' or 'wrap ARGUMENT with CALLBACK key ARGUMENT [if "
                   "EXPR]'");
        return;
    }
    b->wraps[i].param = param_index(&b->proto, arg);
    b->wraps[i].key_param = -1;
    b->wraps[i].callback = spec_callback(spec, name);
    if (b->wraps[i].param < 0)
        spec_error(spec, d->line, "'%s' is not an argument of %s", arg, b->symbol);
    else if (!b->wraps[i].callback)
        spec_error(spec, d->line, "no callback block named '%s'", name);
    else if (keyed)
        check_keyed_wrap(spec, b, i, user);
    else
        check_data_wrap(spec, b, i, user, destroy, dname);
}

/* key PARAM: the pointer the runtime gives the callback, which its function is found by. */
static void check_key(struct spec *spec, struct block *b)
{
    const struct directive *d = &b->d_key;
    b->key_param = param_index(&b->proto, d->text);
    if (b->d_data.line)
        spec_error(spec, d->line, "a callback has 'data' or 'key', not both");
    else if (b->key_param < 0 || !b->proto.params[b->key_param].pointer)
        spec_error(spec, d->line, "'key' names a pointer parameter of %s, not '%s'", b->symbol,
                   d->text);
}

/* data PARAM: the callback's user-data parameter, which carries the closure. */
static void check_data(struct spec *spec, struct block *b)
{
    const struct directive *d = &b->d_data;
    b->key_param = -1;
    if (!b->is_callback) {
        if (d->line || b->d_key.line)
            spec_error(spec, d->line ? d->line : b->d_key.line, "'%s' belongs in a callback block",
                       d->line ? "data" : "key");
        for (int i = 0; i < b->nwraps; i++)
            check_wrap(spec, b, i);
        return;
    }
    if (b->nwraps)
        spec_error(spec, b->d_wrap[0].line, "'wrap' belongs in a function block");
    if (b->outermost)
        spec_error(spec, b->line,
                   "'outermost' has no meaning for a callback: it runs user "
                   "code, which starts at depth 0");
    if (b->d_key.line) {
        check_key(spec, b);
        return;
    }
    if (!d->line) {
        spec_error(spec, b->line, "callback %s has no 'data' (its user-data parameter)", b->symbol);
        return;
    }
    b->data_param = param_index(&b->proto, d->text);
    if (b->data_param < 0)
        spec_error(spec, d->line, "'data' names a pointer parameter of %s, not '%s'", b->symbol,
                   d->text);
    else if (!is_void_pointer(b->proto.params[b->data_param].type))
        spec_error(spec, d->line,
                   "'data' names the user-data parameter of %s, a void * the runtime hands back "
                   "unchanged; '%s' is '%s' (a callback without one is found by a 'key')",
                   b->symbol, d->text, b->proto.params[b->data_param].type);
}

/* current EXPR: the actor current on the thread during the call (a loop's owner), set before
 * it; the call runs the program's code, so the depth is reset as in a callback. */
static void check_current(struct spec *spec, struct block *b)
{
    const struct directive *d = &b->d_current;
    int uses_result = 0;
    if (!d->line)
        return;
    if (b->kind == AT_EV_STEP_BEGIN || b->is_callback) {
        spec_error(spec, d->line,
                   "'current' is for a function that is not a step: a step or "
                   "callback makes its actor current already");
        return;
    }
    b->c_current = expr_whole(spec, d->line, &b->proto, d->text, &uses_result);
    if (uses_result)
        spec_error(spec, d->line, "'current' is set before the call: 'result' is not known then");
}

/* guard: the call runs with the depth raised, every call recorded. */
static void check_guard(struct spec *spec, const struct block *b)
{
    if (!b->guard)
        return;
    if (b->is_callback)
        spec_error(spec, b->guard,
                   "'guard' has no meaning for a callback: it runs the program's code, which "
                   "starts at depth 0");
    else if (b->outermost)
        spec_error(spec, b->guard,
                   "'guard' with 'outermost': the outermost call is guarded already (drop "
                   "'guard')");
}

/* A return type the AT_RETURN_RAX register carries: a pointer or an integer of the C names
 * or <stdint.h>'s. Another (a struct, a float, a typedef) needs its registers said. */
static int returns_in_rax(const char *type)
{
    static const char *const integers[] = {"char",     "short",   "int",   "long",
                                           "unsigned", "signed",  "_Bool", "bool",
                                           "size_t",   "ssize_t", NULL};
    size_t n = strlen(type);
    if (type[n - 1] == '*')
        return 1;
    char *copy = xstrdup(type);
    for (char *word = strtok(copy, " "); word; word = strtok(NULL, " ")) {
        size_t w = strlen(word);
        int known = strcmp(word, "const") == 0 ||
                    (w > 2 && strcmp(word + w - 2, "_t") == 0 && strstr(word, "int"));
        for (int i = 0; integers[i] && !known; i++)
            known = strcmp(word, integers[i]) == 0;
        if (!known)
            return 0;
    }
    return 1;
}

/* patchable [REGISTER...]: the wrapper may stand in for the function's patched entry
 * (AT_PATCH_TABLE), which gives back the registers of the result as the wrapper left them. */
static void check_patchable(struct spec *spec, struct block *b)
{
    static const char *const words[] = {"none", "rax", "rdx", "xmm0", "xmm1", "x87", NULL};
    static const char *const macros[] = {"AT_RETURNS_NOTHING", "AT_RETURN_RAX",  "AT_RETURN_RDX",
                                         "AT_RETURN_XMM0",     "AT_RETURN_XMM1", "AT_RETURN_X87"};
    const struct directive *d = &b->d_patchable;
    if (!d->line)
        return;
    if (b->is_callback || !spec->linked) {
        spec_error(spec, d->line,
                   b->is_callback ? "'patchable' is for a function: a callback has no entry "
                                    "to patch"
                                  : "'patchable' needs a shim linked into the library (shimgen "
                                    "--linked): entries are patched to its own wrappers only");
        return;
    }
    spec->npatchable++;
    if (!*d->text) {
        if (strcmp(b->proto.ret, "void") == 0 || returns_in_rax(b->proto.ret))
            b->c_patchable = xstrdup(strcmp(b->proto.ret, "void") == 0 ? macros[0] : macros[1]);
        else
            spec_error(spec, d->line,
                       "'patchable': which registers return a '%s'? Say them: 'patchable rax' "
                       "(an integer, a pointer, a small struct of them), with rdx, xmm0, xmm1 "
                       "or x87 as the ABI has it (AT_PATCHABLE in actortrace.h)",
                       b->proto.ret);
        return;
    }
    char *copy = xstrdup(d->text);
    b->c_patchable = NULL;
    for (char *word = strtok(copy, " "); word; word = strtok(NULL, " ")) {
        int i = 0;
        while (words[i] && strcmp(words[i], word) != 0)
            i++;
        if (!words[i]) {
            spec_error(spec, d->line,
                       "'patchable' names the registers of the result: none, rax, rdx, xmm0, "
                       "xmm1 or x87, not '%s'",
                       word);
            return;
        }
        b->c_patchable =
            b->c_patchable ? xprintf("%s | %s", b->c_patchable, macros[i]) : xstrdup(macros[i]);
    }
}

/* stamp keep NAME | stamp share NAME (the keeper is matched in check_stamps). */
static void check_stamp(struct spec *spec, struct block *b)
{
    const struct directive *d = &b->d_stamp;
    if (!d->line)
        return;
    int keeps = strncmp(d->text, "keep ", 5) == 0;
    if ((!keeps && strncmp(d->text, "share ", 6) != 0) || !is_word(d->text + (keeps ? 5 : 6), "")) {
        spec_error(spec, d->line, "'stamp' reads 'stamp keep NAME' or 'stamp share NAME'");
        return;
    }
    if (b->kind == AT_EV_NONE || (keeps && b->kind == AT_EV_STEP_BEGIN)) {
        spec_error(spec, d->line, "'stamp %s' needs one event to %s: not with %s",
                   keeps ? "keep" : "share", keeps ? "keep" : "share",
                   keeps ? "step (two events)" : "event none");
        return;
    }
    b->stamp_keeps = keeps;
    b->stamp_name = xstrdup(d->text + (keeps ? 5 : 6));
}

static void check_block(struct spec *spec, struct block *b)
{
    if (!b->d_proto.line) {
        spec_error(spec, b->line, "%s has no 'proto'", b->symbol);
        return;
    }
    if (proto_read(spec, b) < 0)
        return;
    check_event(spec, b);
    check_at(spec, b);
    if (!b->d_actor.line && b->kind != AT_EV_NONE && b->kind != KIND_UNKNOWN)
        spec_error(spec, b->line, "%s has no 'actor'", b->symbol);
    b->c_actor = value(spec, b, &b->d_actor, "actor");
    b->c_peer = value(spec, b, &b->d_peer, "peer");
    b->c_msg = value(spec, b, &b->d_msg, "msg");
    b->c_if = value(spec, b, &b->d_if, "if");
    if (b->d_if.line && b->kind == AT_EV_STEP_BEGIN)
        spec_error(spec, b->d_if.line, "step takes no 'if': step_end must pair with step_begin");
    check_name(spec, b);
    if (b->d_path.line && !is_word(b->d_path.text, "-."))
        spec_error(spec, b->d_path.line, "a path name is one word, not '%s'", b->d_path.text);
    for (int i = 0; i < b->nregisters; i++)
        check_register(spec, b, i);
    check_current(spec, b);
    check_guard(spec, b);
    check_patchable(spec, b);
    check_stamp(spec, b);
    if (b->kind == AT_EV_NONE && b->nregisters == 0 && !b->d_current.line && !b->nwraps)
        spec_error(spec, b->d_event.line,
                   "event none records nothing: add a 'register', 'current' or 'wrap' line");
    check_data(spec, b);
}

/* A function described twice: one event before the call and one after it (a park before a
 * blocking pop, the recv after), recorded by one wrapper; anything else is a mistake. */
static void pair(struct spec *spec, struct block *first, struct block *second)
{
    int step = first->kind == AT_EV_STEP_BEGIN || second->kind == AT_EV_STEP_BEGIN;
    if (!first->is_callback && !first->after && second->after && !step && !first->after_half &&
        !first->is_after_half && !second->nwraps && !second->d_current.line) {
        first->after_half = second;
        second->is_after_half = 1;
        return;
    }
    spec_error(spec, second->line,
               "%s is described twice (first on line %d): a function may have two blocks, the "
               "first recorded before the call, the second 'at after' (no step, no 'wrap' or "
               "'current' in the second)",
               second->symbol, first->line);
}

/* Each stamp kept by one block and shared by at least one; a sharer of a stamp kept after a
 * call is matched by its message, so it has one. */
static void check_stamps(struct spec *spec)
{
    for (int i = 0; i < spec->nblocks; i++) {
        struct block *b = spec->blocks[i];
        if (!b->stamp_name)
            continue;
        const struct block *keeper = NULL;
        int shared = 0;
        for (int j = 0; j < spec->nblocks; j++) {
            const struct block *o = spec->blocks[j];
            if (!o->stamp_name || strcmp(o->stamp_name, b->stamp_name) != 0)
                continue;
            if (o->stamp_keeps && !keeper)
                keeper = o;
            shared |= !o->stamp_keeps;
        }
        if (b->stamp_keeps && keeper != b)
            spec_error(spec, b->d_stamp.line, "stamp %s is kept by %s already (line %d)",
                       b->stamp_name, keeper->symbol, keeper->d_stamp.line);
        else if (b->stamp_keeps && !shared)
            spec_error(spec, b->d_stamp.line, "stamp %s is shared by no block ('stamp share %s')",
                       b->stamp_name, b->stamp_name);
        else if (!b->stamp_keeps && !keeper)
            spec_error(spec, b->d_stamp.line, "no block keeps stamp %s ('stamp keep %s')",
                       b->stamp_name, b->stamp_name);
        else if (!b->stamp_keeps && keeper->after && !b->d_msg.line)
            spec_error(spec, b->d_stamp.line,
                       "stamp %s is kept after the call, with its message: a block that shares "
                       "it has a 'msg' to match",
                       b->stamp_name);
        b->stamp_keeper = keeper;
    }
}

/* Names used twice, callbacks and tables nothing uses: each would generate broken C. */
static void check_uses(struct spec *spec)
{
    for (int i = 0; i < spec->nblocks; i++) {
        const struct block *b = spec->blocks[i];
        for (int j = 0; j < i; j++)
            if (strcmp(b->symbol, spec->blocks[j]->symbol) == 0 &&
                b->is_callback == spec->blocks[j]->is_callback)
                pair(spec, spec->blocks[j], spec->blocks[i]);
        int used = !b->is_callback;
        for (int j = 0; j < spec->nblocks && !used; j++)
            for (int k = 0; k < spec->blocks[j]->nwraps; k++)
                used |= spec->blocks[j]->wraps[k].callback == b;
        if (!used)
            spec_error(spec, b->line, "callback %s is wrapped by no function ('wrap')", b->symbol);
    }
    for (int i = 0; i < spec->ntables; i++) {
        const struct table *t = spec->tables[i];
        int used = 0;
        for (int j = 0; j < spec->nblocks; j++)
            used |=
                spec->blocks[j]->name_table && strcmp(spec->blocks[j]->name_table, t->name) == 0;
        if (!used || t->n == 0)
            spec_error(spec, t->line, "table %s %s", t->name,
                       t->n == 0 ? "has no names" : "is used by no 'name'");
    }
}

static void check_top(struct spec *spec)
{
    if (!spec->runtime.line)
        spec_error(spec, 1, "the spec has no 'runtime NAME' line");
    else if (!is_word(spec->runtime.text, "-"))
        spec_error(spec, spec->runtime.line, "a runtime name is letters, digits, _ and -");
    for (int i = 0; i < spec->nincludes; i++) {
        const char *h = spec->includes[i].text;
        size_t n = strlen(h);
        if (!((h[0] == '"' && h[n - 1] == '"') || (h[0] == '<' && h[n - 1] == '>')) || n < 3)
            spec_error(spec, spec->includes[i].line, "include \"header.h\" or <header.h>");
    }
    for (int i = 0; i < spec->ntables; i++)
        if (!is_word(spec->tables[i]->name, ""))
            spec_error(spec, spec->tables[i]->line, "a table name is letters, digits and _");
    int functions = 0;
    for (int i = 0; i < spec->nblocks; i++)
        functions += !spec->blocks[i]->is_callback;
    if (functions == 0)
        spec_error(spec, spec->runtime.line ? spec->runtime.line : 1,
                   "the spec describes no function");
}

int spec_check(struct spec *spec)
{
    check_top(spec);
    for (int i = 0; i < spec->nblocks; i++) {
        struct block *b = spec->blocks[i];
        if (!is_word(b->symbol, ""))
            spec_error(spec, b->line, "'%s' is not a C name", b->symbol);
        else
            check_block(spec, b);
    }
    check_uses(spec);
    check_stamps(spec);
    return spec->errors;
}
