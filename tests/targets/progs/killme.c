/* Sends to actor 1 (nop_send) with message ids 1, 2, 3, ... until it is killed, and after each
 * send stores the id in a shared file mapping: after a SIGKILL, that file says which sends had
 * returned, so which events the trace must hold. A second thread does the same for actor 2.
 * Usage: killme PROGRESS_FILE [fast|leader_exits]; fast: no pause every 64 sends, so that a
 * small buffer overflows; leader_exits: both senders on threads of their own, and the main
 * thread leaves with pthread_exit (the process goes on, its first thread a zombie). */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int nop_send(int actor, int msg);

static volatile uint64_t *progress; /* [0]: actor 1's last returned send, [1]: actor 2's */
static int fast;

static void *sender(void *arg)
{
    int actor = (int)(intptr_t)arg;
    for (uint64_t i = 1;; i++) {
        nop_send(actor, (int)i);
        progress[actor - 1] = i;
        if (!fast && i % 64 == 0)
            usleep(1); /* a pace the writer follows, so that most of the run is in the file */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    fast = argc > 2 && !strcmp(argv[2], "fast");
    int leader_exits = argc > 2 && !strcmp(argv[2], "leader_exits");
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 4096) < 0)
        return 1;
    progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (progress == MAP_FAILED)
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, sender, (void *)(intptr_t)2);
    if (leader_exits) {
        pthread_create(&t, NULL, sender, (void *)(intptr_t)1);
        pthread_exit(NULL);
    }
    sender((void *)(intptr_t)1);
    return 0;
}
