/* Naming and creating the trace file. ACTORTRACE_OUT is a pattern: %p is the pid and %% a %.
 * The file is always created new (O_EXCL), never through a symbolic link (O_NOFOLLOW), mode
 * 0600. One pattern can name files for several process images, so two rules keep them apart:
 * a child forked from a traced process appends ".PID" when the pattern has no %p, and when the
 * name is taken by an earlier image of the same pid (a program that exec'd itself or another
 * traced program) and the pattern has %p, ".1", ".2", ... is appended. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"

#define MAX_IMAGES 100 /* suffixes tried for the images of one pid */

static int expand_pattern(const char *pattern, char *out, size_t cap)
{
    size_t len = 0;
    for (const char *p = pattern; *p; p++) {
        char pid[16];
        const char *piece = p;
        size_t piece_len = 1;
        if (p[0] == '%' && p[1] == 'p') {
            piece_len = (size_t)snprintf(pid, sizeof pid, "%d", (int)getpid());
            piece = pid;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++;
        }
        if (len + piece_len >= cap)
            return -ENAMETOOLONG;
        memcpy(out + len, piece, piece_len);
        len += piece_len;
    }
    out[len] = '\0';
    return 0;
}

static int create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

static int append(char *path, size_t cap, const char *base, long number)
{
    int n = snprintf(path, cap, "%s.%ld", base, number);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int at__trace_create(char *path, size_t cap, int forked_child)
{
    const char *pattern = at__config.out_pattern;
    int per_pid = strstr(pattern, "%p") != NULL;
    char base[4096];
    AT_RETURN_IF_ERROR(expand_pattern(pattern, base, sizeof base));
    if (forked_child && !per_pid) {
        AT_RETURN_IF_ERROR(append(path, cap, base, (long)getpid()));
        snprintf(base, sizeof base, "%s", path);
    }
    snprintf(path, cap, "%s", base);
    int fd = create(path);
    for (long n = 1; fd == -EEXIST && per_pid && n < MAX_IMAGES; n++) {
        AT_RETURN_IF_ERROR(append(path, cap, base, n));
        fd = create(path);
    }
    return fd;
}
