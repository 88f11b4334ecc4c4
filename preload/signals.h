/* The fatal signals (signals.c), in the lifecycle layer: its handler finishes the trace, and
 * lifecycle.c installs it at the start. */
#ifndef AT_PRELOAD_SIGNALS_H
#define AT_PRELOAD_SIGNALS_H

/* Installs the recorder's handler for the fatal signals the program leaves at their default
 * action, and keeps every handler the program installs (before or after) behind it: the
 * kernel's disposition stays ours, and ours calls the program's. */
void at__signals_install(void);

#endif
