/* A shared library whose functions send (nop_send) from a known depth: built twice, linked
 * into tests/targets/progs/stacks as libstacklinked.so and dlopen'd by it as libstackdl.so, with
 * SENDER the name of the exported entry point. */
int nop_send(int actor, int msg);
int SENDER(int actor, int msg);

/* static: named only by the library's .symtab */
__attribute__((noinline)) static int lib_inner(int actor, int msg)
{
    int r = nop_send(actor, msg);
    __asm__ volatile("" ::: "memory"); /* keeps the call from becoming a tail call */
    return r;
}

__attribute__((noinline)) int SENDER(int actor, int msg)
{
    int r = lib_inner(actor, msg);
    __asm__ volatile("" ::: "memory");
    return r + 1;
}
