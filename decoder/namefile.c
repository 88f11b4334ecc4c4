/* --names FILE: names for ids the trace does not name (or names differently), from a text
 * file of lines "ID NAME" (a message name), "msg ID NAME" or "actor ID NAME"; blank lines and
 * lines starting with '#' are skipped. The file's names replace the trace's, in every trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "at_format.h"
#include "decode.h"

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
    char buf[4096];
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
    for (size_t i = 0; i < d->ntraces; i++)
        if (at__names_set(&d->traces[i].names, space, id, (const uint8_t *)s, name_len) < 0)
            return -ENOMEM;
    return 0;
}

int at__names_file_apply(struct decode *d, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tracedecode: %s: %s\n", path, strerror(errno));
        return -errno;
    }
    char *line = NULL;
    size_t cap = 0, number = 0;
    ssize_t len;
    int err = 0;
    while (err == 0 && (len = getline(&line, &cap, f)) >= 0) {
        number++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        err = apply_line(d, line, (size_t)len);
    }
    if (err == -EINVAL)
        fprintf(stderr, "tracedecode: %s:%zu: expected \"[msg|actor] ID NAME\"\n", path, number);
    free(line);
    fclose(f);
    return err;
}
