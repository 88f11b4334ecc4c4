/* Expressions over a call's arguments, turned into C that yields a uint64_t:
 *
 *   expr    := term [ '+' INTEGER ]
 *   term    := INTEGER | ARGUMENT | GLOBAL | call | 'result' | 'current'
 *            | READ '(' address ')' | 'unwrap' '(' expr ')'
 *   address := pointer [ '+' INTEGER ]
 *   pointer := ARGUMENT | GLOBAL | call | 'result' | READ '(' address ')' | 'unwrap' '(' expr ')'
 *   call    := FUNCTION '(' [ value { ',' value } ] ')'
 *   value   := ARGUMENT | GLOBAL | INTEGER | 'result' | call          (passed as C has them)
 *   READ    := 'u8' | 'u16' | 'u32' | 'u64' | 'ptr'
 *
 * u64(env+8) is the 8-byte integer at byte offset 8 of the struct env points to, and reads of
 * a NULL base give 0, so a wrapper never faults where the runtime would not. unwrap(p) is the
 * program's pointer when p is a closure of this shim, p otherwise. A GLOBAL is a name of the
 * included headers; the compiler checks it and the calls. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

static const struct {
    const char *word;
    const char *helper;
} reads[] = {
    {"u8", "shim_read_u8"},   {"u16", "shim_read_u16"}, {"u32", "shim_read_u32"},
    {"u64", "shim_read_u64"}, {"ptr", "shim_read_u64"},
};

static void skip_blanks(struct expr_cx *cx)
{
    while (isspace((unsigned char)*cx->pos))
        cx->pos++;
}

static void fail(struct expr_cx *cx, const char *message)
{
    if (!cx->failed)
        spec_error(cx->spec, cx->line, "%s", message);
    cx->failed = 1;
}

/* The next word (identifier or number) into `word`; its length, 0 when there is none. */
static size_t next_word(struct expr_cx *cx, char *word, size_t size)
{
    skip_blanks(cx);
    size_t n = 0;
    while ((isalnum((unsigned char)cx->pos[n]) || cx->pos[n] == '_') && n + 1 < size)
        n++;
    memcpy(word, cx->pos, n);
    word[n] = '\0';
    cx->pos += n;
    return n;
}

static int accept(struct expr_cx *cx, char c)
{
    skip_blanks(cx);
    if (*cx->pos != c)
        return 0;
    cx->pos++;
    return 1;
}

/* An integer: its C text, NULL when the word is not one. */
static char *integer(const char *word)
{
    char *end;
    strtoull(word, &end, 0);
    if (!isdigit((unsigned char)word[0]) || *end)
        return NULL;
    return xprintf("%s", word);
}

static char *term(struct expr_cx *cx, int address);

/* READ '(' address ')' after the READ word. */
static char *read_term(struct expr_cx *cx, const char *helper, const char *word)
{
    if (!accept(cx, '(')) {
        fail(cx, xprintf("'%s' reads at an address: write %s(ARGUMENT+OFFSET)", word, word));
        return NULL;
    }
    char *base = term(cx, 1), *offset = xstrdup("0");
    if (base && accept(cx, '+')) {
        char digits[32];
        next_word(cx, digits, sizeof digits);
        free(offset);
        offset = integer(digits);
        if (!offset)
            fail(cx, "an offset is an integer: u64(ARGUMENT+8)");
    }
    if (!cx->failed && !accept(cx, ')'))
        fail(cx, xprintf("missing ')' after %s(...", word));
    return cx->failed ? NULL : xprintf("%s(%s, %s)", helper, base, offset);
}

/* Notes a function or global of the runtime's that an expression names (shimgen.h: weak). */
static void outside_name(struct expr_cx *cx, const char *name)
{
    struct spec *spec = cx->spec;
    for (int i = 0; i < spec->nweak; i++)
        if (strcmp(spec->weak[i], name) == 0)
            return;
    spec->weak = realloc(spec->weak, (size_t)(spec->nweak + 1) * sizeof *spec->weak);
    if (!spec->weak) {
        perror("shimgen");
        exit(2);
    }
    spec->weak[spec->nweak++] = xstrdup(name);
}

static char *argument(struct expr_cx *cx, const char *word, int address)
{
    const struct proto *proto = cx->proto;
    for (int i = 0; i < proto->nparams; i++) {
        const struct param *p = &proto->params[i];
        if (strcmp(word, p->name) != 0)
            continue;
        if (p->by_value_struct)
            fail(cx, xprintf("'%s' is a struct passed by value: expressions read only through "
                             "pointers",
                             word));
        else if (address && !p->pointer)
            fail(cx, xprintf("'%s' is not a pointer (its type is '%s'): reads go through "
                             "pointer arguments",
                             word, p->type));
        return xprintf("(uintptr_t)%s", word);
    }
    if (cx->globals) {
        outside_name(cx, word);
        return xprintf("(uint64_t)(uintptr_t)%s", word);
    }
    fail(cx, xprintf("unknown name '%s': not an argument of %s, nor result or current (a global "
                     "needs the spec to include its header)",
                     word, proto->name));
    return NULL;
}

static char *result(struct expr_cx *cx)
{
    const char *ret = cx->proto->ret;
    if (strcmp(ret, "void") == 0)
        fail(cx, xprintf("'result': %s returns void", cx->proto->name));
    else if (!strchr(ret, '*') &&
             (strncmp(ret, "struct ", 7) == 0 || strncmp(ret, "union ", 6) == 0))
        fail(cx, "'result' is a struct returned by value: expressions read only through pointers");
    cx->uses_result = 1;
    return xstrdup("(uintptr_t)at_result");
}

/* A call's argument, as C has it: a name, an integer, result or another call. */
static char *call(struct expr_cx *cx, const char *function);

static char *call_value(struct expr_cx *cx)
{
    char word[64];
    if (next_word(cx, word, sizeof word) == 0) {
        fail(cx, "a call's argument is an argument, a global, an integer, result or a call");
        return NULL;
    }
    if (strcmp(word, "result") == 0 && result(cx))
        return xstrdup("at_result");
    skip_blanks(cx);
    if (*cx->pos == '(')
        return call(cx, word);
    if (integer(word))
        return xstrdup(word);
    char *name = argument(cx, word, 0);
    return name ? xstrdup(word) : NULL;
}

/* FUNCTION '(' values ')' after the name: the C call. */
static char *call(struct expr_cx *cx, const char *function)
{
    accept(cx, '(');
    outside_name(cx, function);
    char *text = xprintf("%s(", function);
    for (int n = 0; !cx->failed && !accept(cx, ')'); n++) {
        if (n && !accept(cx, ',')) {
            fail(cx, xprintf("missing ')' after %s(...", function));
            break;
        }
        char *value = call_value(cx);
        text = xprintf("%s%s%s", text, n ? ", " : "", value ? value : "");
    }
    return cx->failed ? NULL : xprintf("%s)", text);
}

static char *term(struct expr_cx *cx, int address)
{
    char word[64];
    if (next_word(cx, word, sizeof word) == 0) {
        fail(cx, *cx->pos ? xprintf("unexpected '%c'", *cx->pos) : "an expression is missing");
        return NULL;
    }
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        if (strcmp(word, reads[i].word) == 0)
            return read_term(cx, reads[i].helper, word);
    skip_blanks(cx);
    if (strcmp(word, "unwrap") == 0 && *cx->pos == '(') {
        accept(cx, '(');
        char *inner = expr_parse(cx);
        if (!cx->failed && !accept(cx, ')'))
            fail(cx, "missing ')' after unwrap(...");
        return cx->failed ? NULL : xprintf("shim_unwrap(%s)", inner);
    }
    if (*cx->pos == '(' && !integer(word)) {
        char *c = call(cx, word);
        return c ? xprintf("(uint64_t)(uintptr_t)%s", c) : NULL;
    }
    char *value = integer(word);
    if (value && address)
        fail(cx, "a read's address is a pointer (an argument, a global, a call, result or another "
                 "read), not a number");
    if (value)
        return value;
    if (strcmp(word, "result") == 0)
        return result(cx);
    if (strcmp(word, "current") == 0) {
        if (address)
            fail(cx, "'current' is an actor id, not an address");
        return xstrdup("at_current_actor()");
    }
    return argument(cx, word, address);
}

char *expr_parse(struct expr_cx *cx)
{
    char *value = term(cx, 0);
    if (value && accept(cx, '+')) {
        char digits[32];
        next_word(cx, digits, sizeof digits);
        char *offset = integer(digits);
        if (!offset)
            fail(cx, "only an integer may be added to an expression");
        else
            value = xprintf("(%s + %s)", value, offset);
    }
    return cx->failed ? NULL : value;
}

char *expr_whole(struct spec *spec, int line, const struct proto *proto, const char *text,
                 int *uses_result)
{
    struct expr_cx cx = expr_start(spec, line, proto, text);
    char *value = expr_parse(&cx);
    skip_blanks(&cx);
    if (value && *cx.pos)
        fail(&cx, xprintf("unexpected '%s' after the expression", cx.pos));
    *uses_result |= cx.uses_result;
    return cx.failed ? NULL : value;
}

struct expr_cx expr_start(struct spec *spec, int line, const struct proto *proto, const char *text)
{
    return (struct expr_cx){
        .spec = spec, .line = line, .proto = proto, .pos = text, .globals = spec->nincludes > 0};
}
