/* Layer config (config.c): the ACTORTRACE_* environment variables, read once. Uses util. */
#ifndef AT_PRELOAD_CONFIG_H
#define AT_PRELOAD_CONFIG_H

#include <stdint.h>

#include "util.h"

#define AT_STACK_DEPTH_MAX 32 /* the most frames ACTORTRACE_STACK_DEPTH may ask for */

struct at_config {
    const char *out_pattern; /* ACTORTRACE_OUT */
    const char *ring_dir;    /* ACTORTRACE_RING_DIR */
    unsigned block_kb;       /* ACTORTRACE_BLOCK_KB */
    unsigned buffer_mb;      /* ACTORTRACE_BUFFER_MB */
    unsigned mode;           /* ACTORTRACE_MODE: enum at_mode */
    int zstd_level;          /* ACTORTRACE_ZSTD_LEVEL */
    unsigned predicted;      /* ACTORTRACE_ENCODING=predicted: at_events_predict, not columns */
    unsigned writer_nice;    /* ACTORTRACE_WRITER_NICE: nice levels below the program's */
    uint64_t stack_kinds;    /* ACTORTRACE_STACKS: bit k captures a stack on kind k */
    unsigned stack_depth;    /* ACTORTRACE_STACK_DEPTH: frames kept, at most AT_STACK_DEPTH_MAX */
    unsigned stack_every;    /* ACTORTRACE_STACK_EVERY: 1 in N events of those kinds */
};

extern struct at_config at__config;

/* Reads the environment into at__config; reports unknown or malformed variables on stderr. */
void at__config_load(void);
/* Reads the ACTORTRACE_STACK* variables into at__config (stacks.c calls it at load time). */
void at__config_stacks(void);

#endif
