/* Reading a C prototype: the return type, the name, and each parameter's type and name, which
 * is all a wrapper needs to forward a call and to read its arguments. Declarators that would
 * need a real C parser (arrays, functions returning function pointers) are refused with a
 * message that says how to write them instead. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "shimgen.h"

static const char *const type_words[] = {
    "void",     "char",  "short",    "int",    "long",  "float", "double", "signed",
    "unsigned", "const", "volatile", "struct", "union", "enum",  "_Bool",  "restrict",
};

static int is_type_word(const char *word, size_t n)
{
    for (size_t i = 0; i < sizeof type_words / sizeof type_words[0]; i++)
        if (strlen(type_words[i]) == n && strncmp(type_words[i], word, n) == 0)
            return 1;
    return 0;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* A copy of s[0..n) without blanks at either end, runs of blanks made one space. */
static char *squeeze(const char *s, size_t n)
{
    char *out = xalloc(n + 1), *o = out;
    int blank = 0;
    for (size_t i = 0; i < n; i++) {
        if (isspace((unsigned char)s[i])) {
            blank = 1;
            continue;
        }
        if (blank && o != out)
            *o++ = ' ';
        blank = 0;
        *o++ = s[i];
    }
    *o = '\0';
    return out;
}

/* The last identifier in s[0..n): its start and length; 0 when there is none. */
static size_t last_ident(const char *s, size_t n, size_t *start)
{
    size_t end = n;
    while (end > 0 && !ident_char(s[end - 1]))
        end--;
    size_t begin = end;
    while (begin > 0 && ident_char(s[begin - 1]))
        begin--;
    *start = begin;
    return end - begin;
}

/* One parameter: "const char *name", "int (*fn)(void *)". Returns 0 or -1 (reported). */
static int read_param(struct spec *spec, int line, const char *text, int index, struct param *p)
{
    size_t n = strlen(text), start, len;
    const char *fnptr = strstr(text, "(*");
    if (strcmp(text, "...") == 0) {
        spec_error(spec, line,
                   "variadic functions cannot be wrapped (there is no portable way "
                   "to forward their arguments)");
        return -1;
    }
    if (strchr(text, '[')) {
        spec_error(spec, line, "parameter %d: write an array parameter as a pointer", index);
        return -1;
    }
    if (fnptr) {
        start = (size_t)(fnptr - text) + 2;
        while (isspace((unsigned char)text[start]))
            start++;
        for (len = 0; ident_char(text[start + len]);)
            len++;
    } else {
        len = last_ident(text, n, &start);
    }
    if (len == 0 || is_type_word(text + start, len) || (!fnptr && start == 0)) {
        spec_error(spec, line, "parameter %d ('%s') has no name", index, text);
        return -1;
    }
    p->name = squeeze(text + start, len);
    char *rest = xprintf("%.*s%s", (int)start, text, text + start + len);
    p->type = squeeze(rest, strlen(rest));
    free(rest);
    p->pointer = strchr(p->type, '*') != NULL;
    const char *t = strncmp(p->type, "const ", 6) == 0 ? p->type + 6 : p->type;
    p->by_value_struct =
        !p->pointer && (strncmp(t, "struct ", 7) == 0 || strncmp(t, "union ", 6) == 0);
    return 0;
}

/* Splits the text between the parentheses at its top-level commas. */
static int read_params(struct spec *spec, int line, const char *list, struct proto *proto)
{
    char *all = squeeze(list, strlen(list));
    int err = 0;
    if (strcmp(all, "void") == 0 || !*all)
        return 0;
    for (char *p = all, *start = all; !err; p++) {
        int depth = 0;
        for (; *p && (depth || *p != ','); p++)
            depth += (*p == '(') - (*p == ')');
        int last = !*p;
        *p = '\0';
        char *param = squeeze(start, strlen(start));
        if (proto->nparams == MAX_PARAMS) {
            spec_error(spec, line, "more than %d parameters", MAX_PARAMS);
            return -1;
        }
        err = read_param(spec, line, param, proto->nparams + 1, &proto->params[proto->nparams]);
        proto->nparams++;
        free(param);
        if (last)
            break;
        start = p + 1;
    }
    free(all);
    return err;
}

static int check_names(struct spec *spec, int line, const struct proto *proto)
{
    for (int i = 0; i < proto->nparams; i++) {
        const char *name = proto->params[i].name;
        if (strncmp(name, "at_", 3) == 0) {
            spec_error(spec, line, "parameter '%s': names starting with at_ are the shim's own",
                       name);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(name, proto->params[j].name) == 0) {
                spec_error(spec, line, "two parameters are named '%s'", name);
                return -1;
            }
    }
    return 0;
}

/* Reads b->d_proto into b->proto. Returns 0 or -1 (reported). */
int proto_read(struct spec *spec, struct block *b)
{
    struct proto *proto = &b->proto;
    const char *text = proto->text = squeeze(b->d_proto.text, strlen(b->d_proto.text));
    int line = b->d_proto.line;
    const char *open = strchr(text, '('), *close = strrchr(text, ')');
    size_t start, len = open ? last_ident(text, (size_t)(open - text), &start) : 0;
    if (!open || !close || close < open || close[1] != '\0' || len == 0 || start == 0 ||
        is_type_word(text + start, len) ||
        (size_t)(open - text) != start + len + (text[start + len] == ' ')) {
        spec_error(spec, line,
                   "a prototype reads 'RETURN_TYPE NAME(TYPE NAME, ...)' and ends "
                   "with ')', without a semicolon");
        return -1;
    }
    proto->name = squeeze(text + start, len);
    proto->ret = squeeze(text, start);
    if (strcmp(proto->name, b->symbol) != 0) {
        spec_error(spec, line, "the prototype is of '%s', the block of '%s'", proto->name,
                   b->symbol);
        return -1;
    }
    char *list = xprintf("%.*s", (int)(close - open - 1), open + 1);
    int err = read_params(spec, line, list, proto);
    free(list);
    return err ? err : check_names(spec, line, proto);
}
