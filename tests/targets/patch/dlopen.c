/* Loads refrt with dlopen (the library given, built -Bsymbolic-functions so that its own calls
 * are direct) and runs one actor through COUNT messages sent by the program: the tracer must
 * patch the library before dlopen returns. Prints the runtime's ground truth. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "refrt.h"

/* The runtime's functions, from dlsym: calls through these pointers bypass every PLT. */
static struct {
    int (*init)(int);
    uint32_t (*msg_type)(const char *);
    rt_actor *(*spawn)(const char *, rt_behavior, void *);
    void (*tell)(rt_actor *, uint32_t, intptr_t);
    void (*wait)(void);
    void (*shutdown)(void);
    void (*print_ground_truth)(void);
} rt;

static long count;

static int sink(rt_actor *self, rt_msg *msg, void *state)
{
    (void)self, (void)state;
    return msg->payload == count ? RT_STOP : RT_CONTINUE;
}

static int load(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return -1;
    }
    *(void **)&rt.init = dlsym(lib, "rt_init");
    *(void **)&rt.msg_type = dlsym(lib, "rt_msg_type");
    *(void **)&rt.spawn = dlsym(lib, "rt_spawn");
    *(void **)&rt.tell = dlsym(lib, "rt_tell");
    *(void **)&rt.wait = dlsym(lib, "rt_wait");
    *(void **)&rt.shutdown = dlsym(lib, "rt_shutdown");
    *(void **)&rt.print_ground_truth = dlsym(lib, "rt_print_ground_truth");
    return rt.init && rt.msg_type && rt.spawn && rt.tell && rt.wait && rt.shutdown &&
                   rt.print_ground_truth
               ? 0
               : -1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || load(argv[1]) < 0 || (count = atol(argv[2])) < 1) {
        fprintf(stderr, "usage: dlopen LIBREFRT COUNT\n");
        return 2;
    }
    if (rt.init(0) < 0)
        return 1;
    uint32_t type = rt.msg_type("TICK");
    rt_actor *actor = rt.spawn("sink", sink, NULL);
    for (long i = 1; i <= count; i++)
        rt.tell(actor, type, i);
    rt.wait();
    rt.shutdown();
    rt.print_ground_truth();
    return 0;
}
