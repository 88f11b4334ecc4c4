/* Expressions over a call's arguments (expr.c has the grammar). */
#ifndef SHIMGEN_EXPR_H
#define SHIMGEN_EXPR_H

#include "shimgen.h"

/* The state of one expression being read: where it is, whose arguments it may name. */
struct expr_cx {
    struct spec *spec;
    int line;
    const struct proto *proto;
    const char *pos; /* the next character to read */
    int failed;      /* a mistake was reported: the rest of the expression is not judged */
    int uses_result;
    int globals; /* names that are no argument are the headers' globals (the spec includes some) */
};

/* Reads one expression from cx->pos, leaving cx->pos after it. Returns its C text (a uint64_t
 * value), or NULL after reporting a mistake. */
char *expr_parse(struct expr_cx *cx);

/* An expression that must be all of `text`. Sets *uses_result when it names the result. */
char *expr_whole(struct spec *spec, int line, const struct proto *proto, const char *text,
                 int *uses_result);

/* The state for an expression of `proto` on `line`, starting at `text`. */
struct expr_cx expr_start(struct spec *spec, int line, const struct proto *proto, const char *text);

#endif
