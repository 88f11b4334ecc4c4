/* longjmp and friends, wrapped (jumps.c), in the util layer: it uses only the installed
 * headers' per-thread state. */
#ifndef AT_PRELOAD_JUMPS_H
#define AT_PRELOAD_JUMPS_H

/* Resolves the jump functions (before a signal handler may need them) and checks that a
 * jmp_buf's stack pointer can be read. */
void at__jumps_resolve(void);

#endif
