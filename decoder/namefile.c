/* --names FILE: names for ids the trace does not name (or names differently). Two forms:
 * - text lines "ID NAME" (a message name), "msg ID NAME" or "actor ID NAME"; blank lines and
 *   lines starting with '#' are skipped;
 * - a JSON array of message names in id order: element i names message id i; null and ""
 *   elements name nothing (the form of a runtime's id-to-name table, such as Aether's).
 * In a trace whose message name ids are types plus one (names.h), a message number is a type.
 * A file whose first non-blank character is '[' is the JSON form. The file's names replace the
 * trace's, in every trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_format.h"
#include "decode.h"

#define NAME_MAX_BYTES 4096

/* A message number is a type in a trace whose message name ids are types plus one. */
static int set_name(struct decode *d, unsigned space, uint64_t id, const char *s, size_t len)
{
    for (size_t i = 0; i < d->ntraces; i++) {
        struct names *nm = &d->traces[i].names;
        uint64_t in_trace = space == AT_NAME_MSG ? id + nm->msg_shift : id;
        if (at__names_set(nm, space, in_trace, (const uint8_t *)s, len) < 0)
            return -ENOMEM;
        at__names_mark_given(nm, space, in_trace);
    }
    d->names_given++;
    return 0;
}

/* ---- "ID NAME" lines ---- */

static bool parse_id(const char **s, uint64_t *id)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(*s, &end, 0);
    if (errno || end == *s || (*end != ' ' && *end != '\t'))
        return false;
    *id = v;
    *s = end + strspn(end, " \t");
    return true;
}

/* One line, without its newline. Returns 0, -EINVAL when malformed, or -ENOMEM. */
static int apply_line(struct decode *d, const char *line, size_t len)
{
    char buf[NAME_MAX_BYTES];
    if (len >= sizeof buf)
        return -EINVAL;
    memcpy(buf, line, len);
    buf[len] = '\0';
    const char *s = buf + strspn(buf, " \t");
    if (*s == '\0' || *s == '#')
        return 0;
    unsigned space = AT_NAME_MSG;
    if (strncmp(s, "actor", 5) == 0 || strncmp(s, "msg", 3) == 0) {
        space = s[0] == 'a' ? AT_NAME_ACTOR : AT_NAME_MSG;
        s += strcspn(s, " \t");
        s += strspn(s, " \t");
    }
    uint64_t id;
    size_t name_len;
    if (!parse_id(&s, &id) || (name_len = strlen(s)) == 0)
        return -EINVAL;
    return set_name(d, space, id, s, name_len);
}

static int apply_lines(struct decode *d, const char *path, const char *text, size_t size)
{
    size_t number = 0;
    for (const char *p = text, *end = text + size; p < end; number++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)((nl ? nl : end) - p);
        while (len > 0 && p[len - 1] == '\r')
            len--;
        int err = apply_line(d, p, len);
        if (err == -EINVAL)
            fprintf(stderr, "tracedecode: %s:%zu: expected \"[msg|actor] ID NAME\"\n", path,
                    number + 1);
        if (err < 0)
            return err;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* ---- A JSON array of names ---- */

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static int hex4(const char *p, const char *end, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++, p++) {
        if (p >= end)
            return -EINVAL;
        int c = *p;
        unsigned digit = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                : 16u;
        if (digit > 15)
            return -EINVAL;
        *v = *v << 4 | digit;
    }
    return 0;
}

static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape at *p (after the 'u'): one code point, or a surrogate pair. */
static int unicode_escape(const char **p, const char *end, unsigned *cp)
{
    if (hex4(*p, end, cp) < 0)
        return -EINVAL;
    *p += 4;
    if (*cp < 0xd800 || *cp > 0xdfff)
        return 0;
    unsigned low;
    if (*cp > 0xdbff || end - *p < 6 || (*p)[0] != '\\' || (*p)[1] != 'u' ||
        hex4(*p + 2, end, &low) < 0 || low < 0xdc00 || low > 0xdfff)
        return -EINVAL;
    *p += 6;
    *cp = 0x10000 + ((*cp - 0xd800) << 10) + (low - 0xdc00);
    return 0;
}

/* One escape after its backslash, appended to out. */
static int escape(const char **p, const char *end, char *out, size_t *len)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (*p >= end)
        return -EINVAL;
    char c = *(*p)++;
    const char *known = c ? strchr(from, c) : NULL;
    if (known) {
        out[(*len)++] = to[known - from];
        return 0;
    }
    unsigned cp;
    if (c != 'u' || unicode_escape(p, end, &cp) < 0)
        return -EINVAL;
    *len += put_utf8(out + *len, cp);
    return 0;
}

/* A JSON string at *p (its opening quote), decoded into out (NAME_MAX_BYTES). */
static int json_string(const char **p, const char *end, char *out, size_t *len)
{
    const char *s = *p + 1;
    *len = 0;
    while (s < end && *s != '"') {
        if (*len > NAME_MAX_BYTES - 8 || (unsigned char)*s < 0x20)
            return -EINVAL;
        if (*s == '\\') {
            s++;
            if (escape(&s, end, out, len) < 0)
                return -EINVAL;
        } else {
            out[(*len)++] = *s++;
        }
    }
    if (s >= end)
        return -EINVAL;
    *p = s + 1;
    return 0;
}

/* One element: a string names message id `id`; null names nothing. */
static int apply_element(struct decode *d, const char **p, const char *end, uint64_t id)
{
    if (end - *p >= 4 && memcmp(*p, "null", 4) == 0) {
        *p += 4;
        return 0;
    }
    char name[NAME_MAX_BYTES];
    size_t len;
    if (*p >= end || **p != '"' || json_string(p, end, name, &len) < 0)
        return -EINVAL;
    return len ? set_name(d, AT_NAME_MSG, id, name, len) : 0;
}

static int apply_array(struct decode *d, const char *path, const char *text, size_t size)
{
    const char *end = text + size, *p = skip_space(text, end) + 1; /* past '[' */
    int err = 0;
    p = skip_space(p, end);
    for (uint64_t id = 0; p < end && *p != ']'; id++) {
        if (id > 0) {
            if (*p != ',') {
                err = -EINVAL;
                break;
            }
            p = skip_space(p + 1, end);
        }
        if ((err = apply_element(d, &p, end, id)) < 0)
            break;
        p = skip_space(p, end);
    }
    if (err == 0 && (p >= end || skip_space(p + 1, end) != end))
        err = -EINVAL;
    if (err == -EINVAL)
        fprintf(stderr, "tracedecode: %s: byte %zu: expected a JSON array of strings or null\n",
                path, (size_t)(p - text));
    return err;
}

/* ---- The file ---- */

static int read_all(FILE *f, char **text, size_t *size)
{
    size_t cap = 0;
    *text = NULL;
    *size = 0;
    for (;;) {
        if (at__array_grow((void **)text, &cap, *size, 1, 65536) < 0)
            return -ENOMEM;
        size_t n = fread(*text + *size, 1, cap - *size, f);
        *size += n;
        if (n == 0)
            return ferror(f) ? -EIO : 0;
    }
}

int at__names_file_apply(struct decode *d, const char *path)
{
    d->names_path = path;
    FILE *f = fopen(path, "r");
    if (!f) {
        int err = errno;
        fprintf(stderr, "tracedecode: %s: %s\n", path, strerror(err));
        return -err;
    }
    char *text;
    size_t size;
    int err = read_all(f, &text, &size);
    fclose(f);
    if (err == 0) {
        const char *first = skip_space(text, text + size);
        err = first < text + size && *first == '[' ? apply_array(d, path, text, size)
                                                   : apply_lines(d, path, text, size);
    } else {
        fprintf(stderr, "tracedecode: %s: %s\n", path, strerror(-err));
    }
    free(text);
    return err;
}
