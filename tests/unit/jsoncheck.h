/* jsoncheck.h: a strict JSON validator (RFC 8259, UTF-8 checked) and a field lookup for the
 * decoder's tests, so they can assert that every output line is JSON without an outside tool.
 * Header-only, because every .c file in tests/unit/ is a test program of its own; the entry
 * points are inline, so that a program (tests/fuzz/fuzz_decode.c) may use only some of them. */
#ifndef JSONCHECK_H
#define JSONCHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jc {
    const unsigned char *p, *end;
    int depth;
};

static int jc_value(struct jc *j);

static void jc_space(struct jc *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int jc_lit(struct jc *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
        return 0;
    j->p += n;
    return 1;
}

static int jc_digits(struct jc *j)
{
    const unsigned char *start = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > start;
}

static int jc_number(struct jc *j)
{
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p < j->end && *j->p == '0')
        j->p++;
    else if (!jc_digits(j))
        return 0;
    if (j->p < j->end && *j->p == '.' && (j->p++, !jc_digits(j)))
        return 0;
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        return jc_digits(j);
    }
    return 1;
}

/* One UTF-8 sequence of 2-4 bytes, RFC 3629. */
static int jc_utf8(struct jc *j)
{
    unsigned c = *j->p, n, lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if ((unsigned)(j->end - j->p) < n || j->p[1] < lo || j->p[1] > hi)
        return 0;
    for (unsigned i = 2; i < n; i++)
        if ((j->p[i] & 0xC0) != 0x80)
            return 0;
    j->p += n;
    return 1;
}

static int jc_string(struct jc *j)
{
    if (j->p == j->end || *j->p++ != '"')
        return 0;
    while (j->p < j->end) {
        unsigned c = *j->p;
        if (c == '"') {
            j->p++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c >= 0x80) {
            if (!jc_utf8(j))
                return 0;
            continue;
        }
        j->p++;
        if (c != '\\')
            continue;
        if (j->p == j->end)
            return 0;
        c = *j->p++;
        if (c == 'u') {
            for (int i = 0; i < 4; i++, j->p++)
                if (j->p == j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
                    return 0;
        } else if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
            return 0;
        }
    }
    return 0;
}

static int jc_members(struct jc *j, char close, int keyed)
{
    j->p++;
    jc_space(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 1;
    }
    for (;;) {
        if (keyed) {
            if (!jc_string(j))
                return 0;
            jc_space(j);
            if (j->p == j->end || *j->p++ != ':')
                return 0;
        }
        if (!jc_value(j))
            return 0;
        if (j->p == j->end)
            return 0;
        char c = (char)*j->p++;
        if (c == close)
            return 1;
        if (c != ',')
            return 0;
        jc_space(j);
    }
}

static int jc_value(struct jc *j)
{
    int ok;
    jc_space(j);
    if (j->p == j->end || ++j->depth > 64)
        return 0;
    switch (*j->p) {
    case '{':
        ok = jc_members(j, '}', 1);
        break;
    case '[':
        ok = jc_members(j, ']', 0);
        break;
    case '"':
        ok = jc_string(j);
        break;
    case 't':
        ok = jc_lit(j, "true");
        break;
    case 'f':
        ok = jc_lit(j, "false");
        break;
    case 'n':
        ok = jc_lit(j, "null");
        break;
    default:
        ok = jc_number(j);
    }
    j->depth--;
    jc_space(j);
    return ok;
}

/* 1 when s[0..len) is exactly one JSON value. */
static inline int json_valid(const char *s, size_t len)
{
    struct jc j = {(const unsigned char *)s, (const unsigned char *)s + len, 0};
    return jc_value(&j) && j.p == j.end;
}

/* The unsigned number after "key": in a line, or -1 when the key is absent. */
static inline long long json_num(const char *line, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(line, pattern);
    return at ? strtoll(at + strlen(pattern), NULL, 10) : -1;
}

/* 1 when the line holds "key":value, value written exactly as JSON ("\"send\"", "true"). */
static inline int json_has(const char *line, const char *key, const char *value)
{
    char pattern[256];
    snprintf(pattern, sizeof pattern, "\"%s\":%s", key, value);
    const char *at = strstr(line, pattern);
    if (!at)
        return 0;
    char next = at[strlen(pattern)];
    return next == ',' || next == '}' || next == ']';
}

#endif
