/* shimgen: a shim for any runtime, generated from a short spec (docs/SHIMGEN.md).
 *
 * The spec is read in two passes: spec.c reads the lines into blocks (a function, a callback,
 * a name table) and keeps each directive's text and line; check.c validates the whole spec and
 * turns every expression into C; library.c checks the functions against the runtime's libraries
 * (and the program); emit.c writes the shim only when no mistake was found, and main.c gives
 * the compiler's errors about a wrapper at the spec line of its function. */
#ifndef SHIMGEN_H
#define SHIMGEN_H

#include <stdio.h>

#define MAX_PARAMS    16
#define MAX_REGISTERS 4
#define MAX_WRAPS     4
#define MAX_TABLE     256
#define MAX_LIBRARIES 8

/* One directive's text and the line it came from; line 0 means absent. */
struct directive {
    int line;
    char *text;
};

struct param {
    char *type; /* the declaration without the name: "const char *", "int (*)(void *)" */
    char *name;
    int pointer; /* a pointer: expressions may read through it */
    int by_value_struct;
};

struct proto {
    char *text; /* the prototype as written, one space between tokens */
    char *ret;  /* the return type; "void" for none */
    char *name;
    struct param params[MAX_PARAMS];
    int nparams;
};

/* What a function or callback records, with each expression already turned into C (a uint64_t
 * value), and the raw directives it came from. */
struct block {
    int line;
    int is_callback;
    char *symbol; /* the runtime's function, or the callback's name in the spec */
    struct directive d_proto, d_event, d_at, d_actor, d_peer, d_msg, d_name, d_path, d_if, d_data;
    struct directive d_current, d_key, d_stamp;
    struct directive d_patchable; /* text "" when the registers are left to the return type */
    struct directive d_register[MAX_REGISTERS];
    int nregisters;
    struct directive d_wrap[MAX_WRAPS];
    int nwraps;
    int outermost;
    int guard; /* the call runs with the depth raised: lower layers' wrappers record nothing */

    /* filled by check.c */
    struct proto proto;
    int kind;             /* enum at_event_kind (AT_EV_STEP_BEGIN for step), or one of: */
#define KIND_CUSTOM  (-1) /* "custom NAME": registered with at_event_register */
#define KIND_UNKNOWN (-2) /* missing or misspelt: the block's other lines are judged without it */
    char *custom_kind;    /* the registered kind's name */
    int after;            /* records after the call */
    char *c_actor, *c_peer, *c_msg, *c_name, *c_if;
    char *c_current; /* the actor made current during the call, or NULL */
    /* Two blocks of one function: the one recording before the call has the other, recorded
     * after it in the same wrapper, as after_half; that one is marked is_after_half. */
    struct block *after_half;
    int is_after_half;
    char *name_table; /* the table whose names the message-name id refers to */
    char *c_reg_id[MAX_REGISTERS], *c_reg_name[MAX_REGISTERS];
    /* register ... format "FMT" EXPR: the format for snprintf, and EXPR as its argument */
    char *c_reg_format[MAX_REGISTERS], *c_reg_format_arg[MAX_REGISTERS];
    int reg_actor[MAX_REGISTERS]; /* 1: names an actor, 0: names a message id */
    int data_param;               /* callback: index of the user-data parameter */
    int key_param; /* callback: the parameter its closure is found by (`key`), -1 for none */
    struct {
        int param, data_param; /* data_param: -1 for a keyed callback */
        int key_param;         /* the argument a keyed callback is found by, or -1 */
        char *c_if;            /* wrap only when this is not 0; NULL: always */
        int destroy_param;     /* the destroy function of the data, -1 when there is none */
        struct block *callback;
    } wraps[MAX_WRAPS];
    char *c_patchable; /* the AT_RETURN_* registers of its result, for AT_PATCHABLE */
    /* stamp keep|share NAME: the event's timestamp kept for, or shared from, another event */
    char *stamp_name;
    int stamp_keeps;
    const struct block *stamp_keeper; /* a sharer's: the block that keeps its stamp */
    int uses_string_names;
    int uses_formatted_names;
#define FORMATTED_ACTORS 1 /* bits of uses_formatted_names: what its formats name */
#define FORMATTED_MSGS   2
};

struct table {
    int line;
    char *name;
    unsigned long ids[MAX_TABLE];
    char *names[MAX_TABLE];
    int n;
};

struct spec {
    const char *file;
    int errors;
    struct directive *mistakes; /* each mistake's line and message */
    struct directive runtime;
    struct directive includes[16];
    int nincludes;
    struct directive libraries[MAX_LIBRARIES]; /* `library FILE` lines */
    int nlibraries;
    struct directive pkgs[MAX_LIBRARIES]; /* `pkg NAME` lines: pkg-config packages */
    int npkgs;
    char *pkg_cflags; /* what pkg-config gives for them, for the compiler */
    /* --linked: the shim is compiled into the library (shim/support.h) instead of being a
     * library of its own; only then may its functions be patchable */
    int linked;
    int npatchable;
    /* The functions and globals expressions name: declared weak in the shim, so that it loads
     * (it is bound at load time) in a process without the runtime, such as a shell */
    char **weak;
    int nweak;
    struct block **blocks;
    int nblocks;
    struct table **tables;
    int ntables;
};

/* spec.c */
int spec_read(struct spec *spec, const char *file);
void spec_error(struct spec *spec, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints the mistakes on stderr, FILE:LINE: message, in the order of their lines. */
void spec_report(const struct spec *spec);
/* The word of NULL-terminated `words` nearest to a misspelt `word`, NULL when none is close. */
const char *nearest_word(const char *word, const char *const *words);
void *xalloc(size_t size);
char *xstrdup(const char *s);
char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* proto.c: reads b->d_proto into b->proto; 0 or -1 (reported) */
int proto_read(struct spec *spec, struct block *b);

/* check.c: validates every block; returns the number of mistakes */
int spec_check(struct spec *spec);

/* library.c: checks every function against the spec's libraries (and the program, when not
 * NULL: it must import the function); returns the number of mistakes */
int check_libraries(struct spec *spec, const char *program);

/* emit.c */
int emit_shim(const struct spec *spec, FILE *out);

#endif
