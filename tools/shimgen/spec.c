/* Reading a spec: lines into blocks. Each line is a directive (its first word) and its text;
 * `function`, `callback` and `table` open a block that the following lines fill, up to the next
 * block. Nothing here judges the text of a directive: check.c does, once the whole file is read,
 * so that every mistake is reported with its line. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shimgen.h"

#define MAX_LINE 4096

/* Mistakes are kept and printed sorted by line when the whole spec has been judged, so they
 * read in the order of the file whichever pass found them. */
void spec_error(struct spec *spec, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    spec->mistakes = realloc(spec->mistakes, (size_t)(spec->errors + 1) * sizeof *spec->mistakes);
    if (!spec->mistakes) {
        perror("shimgen");
        exit(2);
    }
    spec->mistakes[spec->errors++] = (struct directive){line, text ? text : "(no memory)"};
}

void spec_report(const struct spec *spec)
{
    struct directive *m = spec->mistakes;
    for (int i = 1; i < spec->errors; i++) /* insertion sort: stable, and the list is short */
        for (int j = i; j > 0 && m[j - 1].line > m[j].line; j--) {
            struct directive swap = m[j];
            m[j] = m[j - 1];
            m[j - 1] = swap;
        }
    for (int i = 0; i < spec->errors; i++)
        fprintf(stderr, "%s:%d: %s\n", spec->file, m[i].line, m[i].text);
}

void *xalloc(size_t size)
{
    void *p = calloc(1, size);
    if (!p) {
        perror("shimgen");
        exit(2);
    }
    return p;
}

char *xstrdup(const char *s)
{
    char *copy = xalloc(strlen(s) + 1);
    return strcpy(copy, s);
}

char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        perror("shimgen");
        exit(2);
    }
    va_end(ap);
    return s;
}

/* The edit distance between a and b (insertions, deletions, substitutions), for words. */
static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(b), row[64];
    if (n >= 64)
        return n;
    for (size_t j = 0; j <= n; j++)
        row[j] = j;
    for (size_t i = 1; a[i - 1]; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= n; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            best = above + 1 < best ? above + 1 : best;
            row[j] = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diagonal = above;
        }
    }
    return row[n];
}

const char *nearest_word(const char *word, const char *const *words)
{
    const char *best = NULL;
    size_t best_distance = strlen(word) / 2 < 2 ? strlen(word) / 2 : 2;
    for (; *words; words++) {
        size_t d = distance(word, *words);
        if (d > 0 && d <= best_distance) {
            best = *words;
            best_distance = d - 1;
        }
    }
    return best;
}

/* "unknown directive 'acter' (did you mean 'actor'?)" */
static void unknown_directive(struct spec *spec, int line, const char *word)
{
    static const char *const words[] = {
        "runtime", "include", "library", "pkg",       "function", "callback",  "table",
        "proto",   "event",   "at",      "actor",     "peer",     "msg",       "name",
        "path",    "if",      "data",    "register",  "wrap",     "outermost", "current",
        "key",     "guard",   "stamp",   "patchable", NULL};
    const char *near = nearest_word(word, words);
    if (near)
        spec_error(spec, line, "unknown directive '%s' (did you mean '%s'?)", word, near);
    else
        spec_error(spec, line, "unknown directive '%s'", word);
}

/* Cuts a comment (a # at the start of a word, outside quotes) and the blanks around the text. */
static char *strip(char *line)
{
    int quoted = 0;
    for (char *c = line; *c; c++) {
        if (*c == '\\' && quoted && c[1])
            c++;
        else if (*c == '"')
            quoted = !quoted;
        else if (*c == '#' && !quoted && (c == line || isspace((unsigned char)c[-1])))
            *c = '\0';
        if (!*c)
            break;
    }
    while (isspace((unsigned char)*line))
        line++;
    size_t n = strlen(line);
    while (n > 0 && isspace((unsigned char)line[n - 1]))
        line[--n] = '\0';
    return line;
}

/* The directive slot of a block named `word`, NULL when there is none of that name. */
static struct directive *slot(struct block *b, const char *word)
{
    static const struct {
        const char *word;
        size_t offset;
    } slots[] = {
        {"proto", offsetof(struct block, d_proto)},     {"event", offsetof(struct block, d_event)},
        {"at", offsetof(struct block, d_at)},           {"actor", offsetof(struct block, d_actor)},
        {"peer", offsetof(struct block, d_peer)},       {"msg", offsetof(struct block, d_msg)},
        {"name", offsetof(struct block, d_name)},       {"path", offsetof(struct block, d_path)},
        {"if", offsetof(struct block, d_if)},           {"data", offsetof(struct block, d_data)},
        {"current", offsetof(struct block, d_current)}, {"key", offsetof(struct block, d_key)},
        {"stamp", offsetof(struct block, d_stamp)},
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        if (strcmp(word, slots[i].word) == 0)
            return (struct directive *)((char *)b + slots[i].offset);
    return NULL;
}

static void add_repeated(struct spec *spec, int line, struct directive *list, int *n, int max,
                         const char *word, const char *text)
{
    if (*n == max) {
        spec_error(spec, line, "at most %d '%s' lines in one block", max, word);
        return;
    }
    list[*n].line = line;
    list[(*n)++].text = xstrdup(text);
}

/* One line inside a function or callback block. */
static void block_line(struct spec *spec, struct block *b, int line, const char *word,
                       const char *text)
{
    struct directive *d = slot(b, word);
    if (d) {
        if (d->line)
            spec_error(spec, line, "'%s' given twice (first on line %d)", word, d->line);
        else if (!*text)
            spec_error(spec, line, "'%s' needs a value", word);
        else
            *d = (struct directive){line, xstrdup(text)};
    } else if (strcmp(word, "register") == 0) {
        add_repeated(spec, line, b->d_register, &b->nregisters, MAX_REGISTERS, word, text);
    } else if (strcmp(word, "wrap") == 0) {
        add_repeated(spec, line, b->d_wrap, &b->nwraps, MAX_WRAPS, word, text);
    } else if (strcmp(word, "patchable") == 0) {
        if (b->d_patchable.line)
            spec_error(spec, line, "'patchable' given twice (first on line %d)",
                       b->d_patchable.line);
        b->d_patchable = (struct directive){line, xstrdup(text)};
    } else if (strcmp(word, "outermost") == 0 || strcmp(word, "guard") == 0) {
        if (*text)
            spec_error(spec, line, "'%s' takes no value", word);
        *(word[0] == 'o' ? &b->outermost : &b->guard) = line;
    } else {
        unknown_directive(spec, line, word);
    }
}

/* One line inside a table block: ID NAME. */
static void table_line(struct spec *spec, struct table *t, int line, const char *word,
                       const char *text)
{
    char *end;
    errno = 0;
    unsigned long id = strtoul(word, &end, 0);
    if (*end || errno || !isdigit((unsigned char)word[0]) || id == 0 || id > UINT32_MAX || !*text ||
        strchr(text, ' ')) {
        spec_error(spec, line,
                   "a table line is 'ID NAME' with ID from 1 to 4294967295 and "
                   "NAME one word");
        return;
    }
    for (int i = 0; i < t->n; i++)
        if (t->ids[i] == id)
            spec_error(spec, line, "id %lu is already in table '%s'", id, t->name);
    if (t->n == MAX_TABLE) {
        spec_error(spec, line, "at most %d names in a table", MAX_TABLE);
        return;
    }
    t->ids[t->n] = id;
    t->names[t->n++] = xstrdup(text);
}

struct reader {
    struct block *block;
    struct table *table;
};

static void *grow(void *array, int n)
{
    void **bigger = realloc(array, (size_t)(n + 1) * sizeof(void *));
    if (!bigger) {
        perror("shimgen");
        exit(2);
    }
    return bigger;
}

/* A line that opens a block or stands on its own; 0 when `word` is none of those. */
static int top_line(struct spec *spec, struct reader *r, int line, const char *word,
                    const char *text)
{
    int is_callback = strcmp(word, "callback") == 0;
    if (strcmp(word, "function") == 0 || is_callback) {
        struct block *b = xalloc(sizeof *b);
        *b = (struct block){.line = line, .is_callback = is_callback, .symbol = xstrdup(text)};
        spec->blocks = grow(spec->blocks, spec->nblocks);
        spec->blocks[spec->nblocks++] = b;
        *r = (struct reader){.block = b};
    } else if (strcmp(word, "table") == 0) {
        struct table *t = xalloc(sizeof *t);
        *t = (struct table){.line = line, .name = xstrdup(text)};
        spec->tables = grow(spec->tables, spec->ntables);
        spec->tables[spec->ntables++] = t;
        *r = (struct reader){.table = t};
    } else if (strcmp(word, "runtime") == 0) {
        if (spec->runtime.line)
            spec_error(spec, line, "'runtime' given twice (first on line %d)", spec->runtime.line);
        spec->runtime = (struct directive){line, xstrdup(text)};
        *r = (struct reader){0};
    } else if (strcmp(word, "include") == 0) {
        add_repeated(spec, line, spec->includes, &spec->nincludes, 16, word, text);
        *r = (struct reader){0};
    } else if (strcmp(word, "library") == 0) {
        add_repeated(spec, line, spec->libraries, &spec->nlibraries, MAX_LIBRARIES, word, text);
        *r = (struct reader){0};
    } else if (strcmp(word, "pkg") == 0) {
        add_repeated(spec, line, spec->pkgs, &spec->npkgs, MAX_LIBRARIES, word, text);
        *r = (struct reader){0};
    } else {
        return 0;
    }
    if (!*text)
        spec_error(spec, line, "'%s' needs a value", word);
    return 1;
}

static void read_line(struct spec *spec, struct reader *r, int line, char *text)
{
    char *word = text;
    while (*text && !isspace((unsigned char)*text))
        text++;
    if (*text)
        *text++ = '\0';
    while (isspace((unsigned char)*text))
        text++;
    if (top_line(spec, r, line, word, text))
        return;
    if (r->block)
        block_line(spec, r->block, line, word, text);
    else if (r->table)
        table_line(spec, r->table, line, word, text);
    else if (slot(&(struct block){0}, word) || strcmp(word, "register") == 0 ||
             strcmp(word, "wrap") == 0 || strcmp(word, "outermost") == 0 ||
             strcmp(word, "guard") == 0 || strcmp(word, "patchable") == 0)
        spec_error(spec, line, "'%s' outside a function or callback block", word);
    else
        unknown_directive(spec, line, word);
}

/* Reads `file` into `spec`. Returns 0, or -errno when it cannot be read (said on stderr);
 * mistakes in the text are counted in spec->errors. */
int spec_read(struct spec *spec, const char *file)
{
    FILE *in = fopen(file, "r");
    if (!in) {
        int err = errno;
        fprintf(stderr, "shimgen: %s: %s\n", file, strerror(err));
        return -err;
    }
    spec->file = file;
    struct reader r = {0};
    char buf[MAX_LINE];
    for (int line = 1; fgets(buf, sizeof buf, in); line++) {
        if (!strchr(buf, '\n') && !feof(in)) {
            spec_error(spec, line, "line longer than %d characters", MAX_LINE - 2);
            int c;
            while ((c = fgetc(in)) != EOF && c != '\n')
                ;
            continue;
        }
        char *text = strip(buf);
        if (*text)
            read_line(spec, &r, line, text);
    }
    fclose(in);
    return 0;
}
