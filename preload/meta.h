/* Layer meta (meta.c): metadata records (threads, losses, clocks, the process, names,
 * patches) waiting for the writer. Uses util, config, ring and losses. */
#ifndef AT_PRELOAD_META_H
#define AT_PRELOAD_META_H

#include <stddef.h>
#include <stdint.h>
#include "losses.h"
#include "util.h"

int at__meta_thread(uint32_t tid, uint64_t tsc, const char *name);
int at__meta_thread_exit(uint32_t tid, uint64_t tsc);
int at__meta_lost(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                  uint64_t last_tsc);
/* Overwrite mode's pending losses (losses.c) as LOST records. */
void at__meta_flush_losses(void);
/* The same from a signal handler: only if the lock is free and the queue has room; 0 or a
 * negative errno. */
int at__meta_lost_nowait(uint32_t tid, unsigned reason, uint64_t count, uint64_t first_tsc,
                         uint64_t last_tsc);
int at__meta_clock(void);
void at__meta_clock_fields(uint64_t fields[3]);
int at__meta_process(const char *ring_path);
/* A PATCH record (patch.c); kept, like names, for a forked child's trace too. */
int at__meta_patch(unsigned status, const char *symbol, const char *object, const char *why);
/* Past this, records are refused (and counted) rather than memory grown; it also keeps one
 * META frame under the format's 16 MiB payload limit. */
#define AT_META_MAX_PENDING (8u << 20)
/* Copies the pending records to out (room for AT_META_MAX_PENDING bytes) and empties the
 * queue; *count is their number. Waits at most timeout_ns for the lock (AT_WAIT_FOREVER: no
 * limit): at the end, the thread holding it may be one a fatal signal or _exit stopped for
 * good. Returns the size in bytes, or -ETIMEDOUT. */
long at__meta_take(uint8_t *out, uint32_t *count, uint64_t timeout_ns);
/* Encodes a record of `n` numbers at out (room for 1 + (n + 1) * AT_VARINT_MAX bytes); returns
 * its length. No lock, no allocation. */
size_t at__meta_encode(uint8_t *out, unsigned type, const uint64_t *fields, unsigned n);
/* Queues one record encoded by the caller (type byte, length, body), waiting at most
 * timeout_ns for the lock; without may_allocate, only into the queue's memory as it is.
 * Returns 0 or a negative errno. */
int at__meta_append_raw(const uint8_t *record, size_t len, uint64_t timeout_ns, int may_allocate);
void at__meta_lock(void);
void at__meta_unlock(void);
/* In a forked child: the parent's pending records are the parent's to write; the names
 * registered so far are queued again for the child's trace. */
void at__meta_after_fork(void);
extern uint64_t at__names_lost; /* names that could not be kept; atomic */

#endif
