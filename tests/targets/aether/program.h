/* What the stand-in's programs share: their arguments, a counting actor, and the line of
 * expected counts each prints beside the runtime's ground truth. */
#ifndef PROGRAM_H
#define PROGRAM_H

#include <stdio.h>
#include <stdlib.h>

#include "aether_abi.h"

/* An actor that adds up what it is sent (single.c, panic.c). */
typedef struct {
    ActorBase base;
    long total;
} Counter;

/* argv[i] as a count in [1, max], or fallback when absent; exits with status 2 when malformed. */
static inline long arg_count(int argc, char **argv, int i, long fallback, long max)
{
    if (i >= argc)
        return fallback;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*argv[i] == '\0' || *end != '\0' || v < 1 || v > max) {
        fprintf(stderr, "%s: argument %d must be a count from 1 to %ld\n", argv[0], i, max);
        exit(2);
    }
    return v;
}

/* Prints {"expected":{...}}: the counts the program's logic implies, whatever the timing. */
static inline void print_expected(long local, long remote, long message_local, long message_remote,
                                  long batch_local, long batch_remote, long ask_remote, long reply,
                                  long spawn)
{
    long send =
        local + remote + message_local + message_remote + batch_local + batch_remote + ask_remote;
    printf("{\"expected\":{\"send\":%ld,\"local\":%ld,\"remote\":%ld,\"message_local\":%ld,"
           "\"message_remote\":%ld,\"batch_local\":%ld,\"batch_remote\":%ld,\"ask_local\":0,"
           "\"ask_remote\":%ld,\"step\":%ld,\"spawn\":%ld,\"exit\":%ld,\"reply\":%ld,"
           "\"drop_dead\":0}}\n",
           send, local, remote, message_local, message_remote, batch_local, batch_remote,
           ask_remote, send, spawn, spawn, reply);
}

#endif
