/* The output buffer shared by every format, and the number and JSON string formatting they
 * write with: millions of events a second leave no room for a printf per field. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out.h"

#define OUT_BUFFER (1u << 20)

int at__out_init(struct out *o, int fd)
{
    *o = (struct out){.fd = fd, .buf = malloc(OUT_BUFFER), .cap = OUT_BUFFER};
    return o->buf ? 0 : -ENOMEM;
}

int at__out_flush(struct out *o)
{
    size_t done = 0;
    while (done < o->len && o->error == 0) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0 && errno != EINTR)
            o->error = -errno;
        if (n > 0)
            done += (size_t)n;
    }
    o->len = 0; /* after an error, output is dropped and the error reported once at the end */
    return o->error;
}

/* Flushes, and grows the buffer for the rare line that does not fit in it (a huge name). */
char *at__out_make_room(struct out *o, size_t n)
{
    at__out_flush(o);
    if (n > o->cap) {
        char *grown = realloc(o->buf, n);
        if (!grown)
            return NULL;
        o->buf = grown;
        o->cap = n;
    }
    return o->buf;
}

void at__out_free(struct out *o)
{
    free(o->buf);
    *o = (struct out){.fd = -1};
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

char *at__fmt_u64(char *p, uint64_t v)
{
    char tmp[20];
    char *t = tmp + sizeof tmp;
    while (v >= 100) {
        t -= 2;
        memcpy(t, digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        t -= 2;
        memcpy(t, digit_pairs + 2 * v, 2);
    } else {
        *--t = (char)('0' + v);
    }
    size_t n = (size_t)(tmp + sizeof tmp - t);
    memcpy(p, t, n);
    return p + n;
}

/* The length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF), or 0 when the byte at s does not start one. */
static size_t utf8_length(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* E0 80..9F would be overlong */
        hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF would be a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80; /* overlong */
        hi = c == 0xF4 ? 0x8F : 0xBF; /* past U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

static char *escape_ascii(char *p, uint8_t c)
{
    static const char hex[] = "0123456789abcdef";
    *p++ = '\\';
    switch (c) {
    case '"':
        *p++ = '"';
        break;
    case '\\':
        *p++ = '\\';
        break;
    case '\n':
        *p++ = 'n';
        break;
    case '\r':
        *p++ = 'r';
        break;
    case '\t':
        *p++ = 't';
        break;
    case '\b':
        *p++ = 'b';
        break;
    case '\f':
        *p++ = 'f';
        break;
    default:
        p = AT_PUT(p, "u00");
        *p++ = hex[c >> 4];
        *p++ = hex[c & 15];
    }
    return p;
}

/* Copies the UTF-8 sequence that starts with the byte s[0] >= 0x80, or U+FFFD when that byte
 * starts none; *used gets the bytes of s taken. */
static char *put_utf8(char *p, const uint8_t *s, size_t avail, size_t *used)
{
    size_t n = utf8_length(s, avail);
    if (n == 0) {
        *used = 1;
        return AT_PUT(p, "\xEF\xBF\xBD"); /* U+FFFD for the stray byte */
    }
    memcpy(p, s, n);
    *used = n;
    return p + n;
}

char *at__fmt_json_str(char *p, const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    *p++ = '"';
    for (size_t i = 0, used; i < len; i += used) {
        uint8_t c = s[i];
        used = 1;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
            *p++ = (char)c;
        else if (c < 0x80)
            p = escape_ascii(p, c);
        else
            p = put_utf8(p, s + i, len - i, &used);
    }
    *p++ = '"';
    return p;
}

char *at__fmt_utf8(char *p, const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    for (size_t i = 0, used; i < len; i += used) {
        used = 1;
        if (s[i] < 0x80)
            *p++ = (char)s[i];
        else
            p = put_utf8(p, s + i, len - i, &used);
    }
    return p;
}
