/* The output buffer every format writes into, and the number and JSON string formatting they
 * write with (out.c). Below the trace layer, so that any layer can format a field. */
#ifndef OUT_H
#define OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct out {
    int fd;
    char *buf;
    size_t len, cap;
    int error; /* the first write error, as a negative errno; later writes are skipped */
};

/* Returns 0 or -ENOMEM. */
int at__out_init(struct out *o, int fd);

/* Writes what is buffered. Returns 0 or o->error. */
int at__out_flush(struct out *o);

void at__out_free(struct out *o);

char *at__out_make_room(struct out *o, size_t n);

/* A pointer to at least n free bytes at the end of the buffer (flushing or growing it), or NULL
 * on -ENOMEM. Write there, then at__out_commit the end of what was written. */
static inline char *at__out_reserve(struct out *o, size_t n)
{
    if (o->cap - o->len >= n)
        return o->buf + o->len;
    return at__out_make_room(o, n);
}

static inline void at__out_commit(struct out *o, char *end)
{
    o->len = (size_t)(end - o->buf);
}

static inline char *at__put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* Copies a string literal: p = AT_PUT(p, "text"). p is evaluated once, so it may be a call
 * that writes what comes before the literal. */
#define AT_PUT(p, lit) at__put((p), (lit), sizeof(lit) - 1)

/* Writes v in decimal (at most 20 bytes); returns the end. */
char *at__fmt_u64(char *p, uint64_t v);

/* The most bytes at__fmt_json_str writes for a string of len bytes. */
static inline size_t at__json_str_bound(size_t len)
{
    return 2 + 6 * len;
}

/* Writes s[0..len) as a quoted JSON string: quotes, backslashes and control characters
 * escaped, each byte that is not part of valid UTF-8 replaced by U+FFFD. Returns the end. */
char *at__fmt_json_str(char *p, const char *s, size_t len);

/* Copies s[0..len) with each byte that is not part of valid UTF-8 replaced by U+FFFD (at most
 * 3 * len bytes), for formats whose strings must be UTF-8. Returns the end. */
char *at__fmt_utf8(char *p, const char *s, size_t len);

#endif
