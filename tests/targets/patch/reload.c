/* A plugin patched in dlopen (plug.c built with NAME rt_park) is unloaded, then loaded again as
 * the dependency of another library (parkcaller.c) that calls rt_park through its PLT, which
 * the preloaded wrapper serves: the wrapper must reach the copy loaded now, not the code that
 * went. Usage: reload PLUGIN CALLER. Prints the calls each made; exits 0 when both returned. */
#include <dlfcn.h>
#include <stdio.h>

static void *open_or_die(const char *path)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        fprintf(stderr, "%s\n", dlerror());
    return handle;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: reload PLUGIN CALLER\n");
        return 2;
    }
    void *plugin = open_or_die(argv[1]);
    if (!plugin)
        return 1;
    long (*call_plugin)(int) = (long (*)(int))dlsym(plugin, "call_plugin");
    printf("plugin: %ld calls\n", call_plugin(10));
    dlclose(plugin);
    void *caller = open_or_die(argv[2]);
    if (!caller)
        return 1;
    long (*call_park)(int) = (long (*)(int))dlsym(caller, "call_park");
    printf("caller: %ld calls\n", call_park(10));
    return 0;
}
