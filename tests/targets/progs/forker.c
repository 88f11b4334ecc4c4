/* Records sends across the ways a process makes others (nop_send, actor 1 in the original
 * process, 2 in a child, 3 in an exec'd image), so that each trace can be checked for holding
 * its own process's events and nobody else's:
 *   fork     1..N before fork(); the child sends 1..N to actor 2 and exits; the parent waits
 *            and sends N+1..2N
 *   exec     1..N, then exec's itself as "image", which sends 1..N to actor 3
 *   vfork    1..N, vfork() + exec of /bin/true in the child, then N+1..2N
 *   vfork_exit  the same, but the child calls exit() (a mistake that works untraced: it runs
 *            the exit handlers, here one that sends to actor 4, in the parent's memory)
 *   spawn    the same with posix_spawn
 *   fork_first  fork() before any send; the child sends 1..N to actor 2 and exits; the parent
 *            waits and sends 1..N
 *   _Fork    as fork, with _Fork() (no atfork handlers); an exit handler prints a line in each
 *            process
 * Usage: forker MODE N. Prints {"ground_truth":{...}} with the counts of its own process. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int nop_send(int actor, int msg);
extern char **environ;

static void sends(int actor, long from, long to)
{
    for (long i = from; i <= to; i++)
        nop_send(actor, (int)i);
}

static void send_at_exit(void)
{
    nop_send(4, 1);
}

static void say_exit(void)
{
    printf("exit handler ran\n");
}

static int wait_child(pid_t pid)
{
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long n = atol(argv[2]);
    const char *mode = argv[1];
    if (!strcmp(mode, "image")) {
        sends(3, 1, n);
        printf("{\"ground_truth\":{\"image_send\":%ld}}\n", n);
        return 0;
    }
    if (!strcmp(mode, "fork_first")) {
        pid_t pid = fork();
        if (pid == 0) {
            sends(2, 1, n);
            exit(0);
        }
        int ok = wait_child(pid);
        sends(1, 1, n);
        printf("{\"ground_truth\":{\"send\":%ld,\"child_send\":%ld}}\n", n, n);
        return ok ? 0 : 1;
    }
    sends(1, 1, n);
    fflush(stdout);
    int ok = 1;
    if (!strcmp(mode, "fork") || !strcmp(mode, "_Fork")) {
        if (!strcmp(mode, "_Fork"))
            atexit(say_exit);
        pid_t pid = strcmp(mode, "fork") ? _Fork() : fork();
        if (pid == 0) {
            sends(2, 1, n);
            exit(0);
        }
        ok = wait_child(pid);
    } else if (!strcmp(mode, "exec")) {
        execl(argv[0], argv[0], "image", argv[2], (char *)NULL);
        return 1;
    } else if (!strncmp(mode, "vfork", 5)) {
        atexit(send_at_exit);
        pid_t pid = vfork();
        if (pid == 0 && !strcmp(mode, "vfork_exit"))
            exit(0);
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(1);
        }
        ok = wait_child(pid);
    } else if (!strcmp(mode, "spawn")) {
        pid_t pid;
        char *args[] = {"true", NULL};
        ok = posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) == 0 && wait_child(pid);
    }
    sends(1, n + 1, 2 * n);
    printf("{\"ground_truth\":{\"send\":%ld,\"child_send\":%ld}}\n", 2 * n,
           strcmp(mode, "fork") ? 0 : n);
    return ok ? 0 : 1;
}
