/* Naming and creating the trace file. ACTORTRACE_OUT is a pattern: %p is the pid and %% a %.
 * The file is always created new (O_EXCL), never through a symbolic link (O_NOFOLLOW), mode
 * 0600. One pattern can name files for several process images, so two rules keep them apart:
 * a child forked from a traced process appends ".PID" when the pattern has no %p, and when the
 * name is taken by an earlier image of the same process (a program that exec'd itself or
 * another traced program), ".1", ".2", ... is appended. With %p in the name, a file of the same
 * pid is such an image's; without, a trace changed since this process started is (an earlier
 * image ended its trace before the exec, so after the process began; a file left by an earlier
 * run is older, and any file that is not a trace is another's: both are refused, not ours to
 * add to). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "at_format.h"
#include "config.h"
#include "tracefile.h"
#include "util.h"

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

/* Whether the file at path begins as a trace does: an earlier image's file does, from its
 * creation (the header is its first write). */
static int is_trace(const char *path)
{
    char magic[AT_FILE_MAGIC_LEN];
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    return n == (ssize_t)sizeof magic && memcmp(magic, AT_FILE_MAGIC, sizeof magic) == 0;
}

/* Whether the file at path was changed since this process started (in clock ticks after boot,
 * /proc's unit, with one tick to spare for its rounding down). */
static int changed_since_start(const char *path)
{
    struct stat st;
    struct timespec real, boot;
    long tick = sysconf(_SC_CLK_TCK);
    uint64_t started = at__start_ticks();
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || tick <= 0 || started == 0)
        return 0;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    /* the change time on the boot clock, in ns: mtime - (realtime now - boottime now) */
    int64_t ns = ((int64_t)st.st_mtim.tv_sec - real.tv_sec + boot.tv_sec) * 1000000000 +
                 st.st_mtim.tv_nsec - real.tv_nsec + boot.tv_nsec;
    return ns >= ((int64_t)started - 1) * (1000000000 / tick);
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
    int earlier_image = fd == -EEXIST && (per_pid || (is_trace(path) && changed_since_start(path)));
    for (long n = 1; fd == -EEXIST && earlier_image && n < MAX_IMAGES; n++) {
        AT_RETURN_IF_ERROR(append(path, cap, base, n));
        fd = create(path);
    }
    return fd;
}
