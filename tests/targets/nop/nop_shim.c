/* The shim for tests/targets/nop/nop.c: records a send per call, like a real runtime's send wrapper
 * (resolve, record, forward). Linked only into the benchmark's copy of the library. */
/* general registers only, as every shim whose wrappers stand behind patched entries
 * (include/at_vectors.h) */
#pragma GCC target("general-regs-only")
#include "actortrace.h"

static int (*real_nop_send)(int, int);

AT_EXPORT int nop_send(int actor, int msg)
{
    AT_RESOLVE(real_nop_send, "nop_send");
    at_record(AT_EV_SEND, (uint64_t)actor, at_current_actor(), (uint64_t)msg, 1, 0);
    return real_nop_send(actor, msg);
}

#ifdef AT_BENCH_PATCH
/* The copy of the library for tests/bench/patch.sh also reaches nop_send linked into the
 * program, through a patched entry. */
AT_PATCH_TABLE(AT_PATCHABLE(nop_send, AT_RETURN_RAX));
#endif
