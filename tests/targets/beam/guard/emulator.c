/* A stand-in for another version of the Erlang emulator, for the BEAM shim's guard: it exports
 * etp_erts_version (ERTS_VERSION, set when it is built), an atom table (empty unless
 * ATOM_TABLE), and functions with the names and arguments of the ones the shim patches, which
 * count their calls. The shim must say in one line that this is not erts 13.1.5 and forward
 * every call untouched: each returns what the program expects, and the counts are printed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

const char etp_erts_version[] = ERTS_VERSION;
char erts_atom_table[4096]; /* all zero: no atom table laid out as 13.1.5's */

static volatile unsigned long calls;

/* noinline and used: each stays a whole function the shim patches, as in beam.smp */
#define FN __attribute__((noinline, used))

FN void *erts_schedule(void *esdp, void *p, int reds)
{
    calls++;
    return (char *)esdp + reds + (p != NULL);
}

FN uint64_t erl_create_process(void *parent, uint64_t mod, uint64_t func, uint64_t args, void *so)
{
    calls++;
    return mod + func + args + (parent != so);
}

FN void erts_queue_proc_message(void *sender, void *receiver, uint32_t locks, void *mp,
                                uint64_t msg)
{
    calls += 1 + (sender == receiver) + locks + (mp == NULL) + msg;
}

FN int erts_register_name(void *c_p, uint64_t name, uint64_t id)
{
    calls++;
    return c_p == NULL && name == id;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    uint64_t sum = 0;
    for (long i = 0; i < n; i++) {
        sum += (uintptr_t)erts_schedule(NULL, &sum, 2);
        sum += erl_create_process(NULL, 1, 2, 3, NULL);
        erts_queue_proc_message(&sum, &sum, 0, &sum, 0);
        sum += (uint64_t)erts_register_name(NULL, 7, 7);
    }
    printf("calls %lu sum %llu\n", calls, (unsigned long long)sum);
    return 0;
}
