/* actortrace top: the live view of running programs (tracedecode --top draws it). Given a pid,
 * it finds the process's trace through the ring files (their header names the pid, its start
 * time and the trace), and adds the traces of the process's children that are traced too: the
 * processes of one run. Given trace files, it watches those. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "at_format.h"
#include "cli.h"

static const char top_usage[] =
    "Usage: actortrace top [PID | TRACE...]\n"
    "\n"
    "Shows, refreshed every second, what the traced program is doing: per actor, messages\n"
    "received and sent per second, mailbox depth (its largest in the second) and how it\n"
    "moved since the second before, the share of a core its handlers took, their p99; per\n"
    "worker thread, the share of the second it spent in handlers; events dropped so far.\n"
    "Keys: d r s c p sort by depth, received, sent, core share, p99; / filters actors by a\n"
    "part of their name; q quits. When the program has ended, the view shows its last\n"
    "second and says so.\n"
    "\n"
    "PID: a running traced process, found through its ring file (in ACTORTRACE_RING_DIR,\n"
    "or /dev/shm), with its traced children. TRACE...: trace files, of one run or not yet\n"
    "there (they are waited for). Without an argument: the one traced process running.\n"
    "To start a program and watch it: actortrace record --top -- PROG.\n"
    "\n"
    "Exit status: 0, or 2 for a usage error or when no trace was found.\n";

#define MAX_RUN 64

/* The parent pid of a process (field 4 of /proc/PID/stat), 0 when unknown. */
static long parent_of(long pid)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
    if (fd >= 0)
        close(fd);
    stat[n > 0 ? n : 0] = '\0';
    const char *p = strrchr(stat, ')');
    long ppid = 0;
    return p && sscanf(p + 1, " %*c %ld", &ppid) == 1 ? ppid : 0;
}

static const char *ring_dir(void)
{
    const char *dir = getenv("ACTORTRACE_RING_DIR");
    return dir && dir[0] ? dir : "/dev/shm";
}

/* Reads the header of a ring file whose process is running. Returns 0 or -1. */
static int running_ring(const char *dir, const char *name, struct at_ring_header *h)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t got = fd >= 0 ? read(fd, h, sizeof *h) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof *h || memcmp(h->magic, AT_RING_MAGIC, sizeof h->magic) != 0)
        return -1;
    h->trace_path[sizeof h->trace_path - 1] = '\0';
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%u", h->pid);
    return access(proc, F_OK) == 0 && h->trace_path[0] ? 0 : -1;
}

/* Whether pid is want or one of its descendants (want 0: any process). */
static bool in_run(long pid, long want)
{
    for (int depth = 0; want && pid > 1 && depth < 64; depth++, pid = parent_of(pid))
        if (pid == want)
            return true;
    return want == 0;
}

/* The traces of the running traced processes of pid's run (pid 0: of every one), pid's own
 * first. Returns how many, with their paths in traces (allocated). */
static size_t find_running(long pid, char **traces)
{
    DIR *d = opendir(ring_dir());
    size_t n = 0;
    for (struct dirent *e; d && n < MAX_RUN && (e = readdir(d));) {
        struct at_ring_header h;
        if (running_ring(ring_dir(), e->d_name, &h) < 0 || !in_run(h.pid, pid))
            continue;
        traces[n] = strdup(h.trace_path);
        if (!traces[n])
            break;
        if ((long)h.pid == pid && n > 0) { /* the process itself leads */
            char *own = traces[n];
            traces[n] = traces[0];
            traces[0] = own;
        }
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static bool is_pid(const char *s)
{
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return *s != '\0';
}

int at__top_watch(char *const traces[])
{
    static const char *const front[] = {"--top", "--", NULL};
    return at__cli_decode(front, traces, NULL, 0);
}

int at__top_main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs(top_usage, stdout);
        return 0;
    }
    if (argc > 2 && is_pid(argv[1])) {
        fputs(top_usage, stderr);
        return EXIT_USAGE;
    }
    if (argc > 1 && !is_pid(argv[1]))
        return at__top_watch(argv + 1);
    char *traces[MAX_RUN + 1] = {NULL};
    long pid = argc > 1 ? atol(argv[1]) : 0;
    size_t n = find_running(pid, traces);
    int status = EXIT_USAGE;
    if (n == 0)
        at__cli_say("top: no traced process%s%s is running (no ring file in %s names it)",
                    pid ? " " : "", pid ? argv[1] : "", ring_dir());
    else if (pid == 0 && n > 1)
        at__cli_say("top: %zu traced processes are running; give the pid of one (actortrace "
                    "top PID), or their traces",
                    n);
    else
        status = at__top_watch(traces);
    for (size_t i = 0; i < n; i++)
        free(traces[i]);
    return status;
}
