/* Closes every inherited descriptor (3..1023, as daemons and sandboxes do), then opens a file of
 * its own, which gets one of those numbers, writes 410 bytes to it and keeps recording. The
 * tracer must notice that its trace file's descriptor is gone and write nothing into the
 * program's file. Usage: close_fds FILE SENDS. Prints {"ground_truth":{"file_intact":0|1}}. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nop_send(int actor, int msg);

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long sends = atol(argv[2]);
    for (long i = 0; i < sends; i++)
        nop_send(1, (int)i); /* the tracer is writing by now */
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    char text[410];
    memset(text, 'x', sizeof text);
    if (fd < 0 || write(fd, text, sizeof text) != (ssize_t)sizeof text)
        return 3;
    for (long i = 0; i < sends; i++)
        nop_send(1, (int)i);
    usleep(300 * 1000); /* the writer wakes at least every 100 ms */
    char back[sizeof text + 1];
    ssize_t n = pread(fd, back, sizeof back, 0);
    int intact = n == (ssize_t)sizeof text && memcmp(back, text, sizeof text) == 0;
    printf("{\"ground_truth\":{\"file_intact\":%d}}\n", intact);
    return 0;
}
