/* The recorder's lowest layer: warnings, the clock, the recorder's state word, the process's
 * start time, each thread's state (at__self, at_record.h, and its private part), and the hot
 * path's CPU number where rseq is not registered. Every other file of preload/ may use
 * it; it uses none of them. */
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at_codec.h"
#include "at_vectors.h"
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

/* The CPU number when rseq is not registered (glibc.pthread.rseq=0, valgrind): on every event
 * then, so without a call into the C library where the processor has rdtscp, whose TSC_AUX
 * Linux sets to the CPU number (bits 0-11) and node; else sched_getcpu, the caller's vector
 * registers kept (at_vectors.h): it may be a patched entry's wrapper. */
AT_GENERAL_REGS_ONLY int at__core_slow(void)
{
    static int has_rdtscp = -1; /* races store the same value */
    if (has_rdtscp < 0) {
        unsigned a, b, c, d;
        __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001u), "c"(0));
        has_rdtscp = d >> 27 & 1;
    }
    if (has_rdtscp) {
        unsigned lo, hi, aux;
        __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
        return (int)(aux & 0xfff);
    }
    int cpu;
    AT_VECTORS_KEPT(cpu = sched_getcpu());
    return cpu < 0 ? 0 : cpu;
}

int at__high_fd(int fd)
{
    struct rlimit limit;
    rlim_t floor = 64;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur / 4 * 3 > floor)
        floor = limit.rlim_cur / 4 * 3 < 1000 ? limit.rlim_cur / 4 * 3 : 1000;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
    return high < 0 ? fd : high;
}

int at__fd_is(int fd, dev_t dev, ino_t ino)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

#ifdef AT_TEST_HOOKS
void at__test_delay(const char *name)
{
    const char *v = getenv(name);
    long ms = v ? atol(v) : 0;
    struct timespec delay = {ms / 1000, ms % 1000 * 1000 * 1000};
    if (ms > 0)
        nanosleep(&delay, NULL);
}

void at__test_wait_change(const char *name, const uint32_t *word, uint32_t value)
{
    const char *v = getenv(name);
    uint64_t until = at__clock_ns(CLOCK_MONOTONIC) + (uint64_t)(v ? atol(v) : 0) * 1000 * 1000;
    /* relaxed: the caller's own loads after this are what it acts on */
    while (__atomic_load_n(word, __ATOMIC_RELAXED) == value &&
           at__clock_ns(CLOCK_MONOTONIC) < until)
        __builtin_ia32_pause();
}

uint64_t at__test_limit_ns(const char *name, uint64_t ns)
{
    const char *v = getenv(name);
    return v ? (uint64_t)atol(v) * 1000 * 1000 : ns;
}

void at__test_lattice(const char *name, struct at_tsc_lattice *lattice)
{
    const char *v = getenv(name);
    if (!v)
        return;
    char *end;
    *lattice = (struct at_tsc_lattice){.period = (uint32_t)strtoul(v, &end, 10), .count = 1};
    if (*end != ':')
        return;
    lattice->count = 0;
    do
        lattice->residue[lattice->count++] = (uint8_t)strtoul(end + 1, &end, 10);
    while (*end == ',' && lattice->count < AT_LATTICE_MAX);
}
#endif
