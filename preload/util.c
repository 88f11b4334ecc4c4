/* The recorder's lowest layer: warnings, the clock, the recorder's state word, the process's
 * start time, and each thread's private recorder state. Every other file of preload/ may use
 * it; it uses none of them. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int at__state;
__thread struct at_thread at__self __attribute__((tls_model("initial-exec")));
__thread struct at_thread_state at__thread __attribute__((tls_model("initial-exec")));

void at__warn(const char *fmt, ...)
{
    char line[1024] = "actortrace: ";
    size_t prefix = strlen(line);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + prefix, sizeof line - prefix - 1, fmt, ap);
    va_end(ap);
    size_t len = prefix + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
}

uint64_t at__clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t at__start_ticks(void)
{
    char stat[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
    if (fd >= 0)
        close(fd);
    stat[n > 0 ? n : 0] = '\0';
    /* the name, field 2, is in parentheses and may hold spaces: count from its end */
    const char *p = strrchr(stat, ')');
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}
