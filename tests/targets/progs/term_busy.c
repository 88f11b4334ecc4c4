/* Threads that send (nop_send) and print one line per send, without pause, until SIGTERM at
 * its default action ends the process. After DELAY_MS the first of them stores the time in
 * TIME_FILE (through a shared mapping: a write to the output could wait for the others') and
 * sends SIGTERM to the process, which the kernel then gives to that thread, running. Each line
 * carries the CLOCK_MONOTONIC time it was printed at, so what the program did after the
 * signal is counted from its output (and from the trace, whose ts_ns is the same clock).
 * Untraced, the default action ends every thread at once.
 * Usage: term_busy THREADS DELAY_MS TIME_FILE
 * Prints "THREAD N NS" per send; TIME_FILE holds the time, in decimal. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(const char *line, int len)
{
    ssize_t ignored = write(STDOUT_FILENO, line, (size_t)len);
    (void)ignored;
}

static uint64_t signal_at; /* when the first thread sends SIGTERM */
static char *time_file;

static void *busy(void *arg)
{
    int thread = (int)(intptr_t)arg;
    char line[64];
    for (int n = 1;; n++) {
        nop_send(thread, n);
        uint64_t now = now_ns();
        say(line, snprintf(line, sizeof line, "%d %d %llu\n", thread, n, (unsigned long long)now));
        if (thread == 1 && now >= signal_at) {
            snprintf(time_file, 32, "%llu\n", (unsigned long long)now_ns());
            kill(getpid(), SIGTERM);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc == 4 ? atoi(argv[1]) : 0;
    int fd = argc == 4 ? open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0600) : -1;
    if (threads < 1 || fd < 0 || ftruncate(fd, 32) < 0) {
        fprintf(stderr, "usage: term_busy THREADS DELAY_MS TIME_FILE\n");
        return 2;
    }
    time_file = mmap(NULL, 32, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (time_file == MAP_FAILED)
        return 1;
    time_file[0] = '\n'; /* its page fault now, not between the time and the signal */
    signal_at = now_ns() + (uint64_t)atoi(argv[2]) * 1000000u;
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    for (int i = 1; i <= threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, busy, (void *)(intptr_t)i);
    }
    pthread_sigmask(SIG_BLOCK, &term, NULL); /* the busy threads take it */
    for (;;)
        pause();
}
