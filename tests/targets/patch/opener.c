/* Opens each library named on the command line with dlopen, in order, and prints what it got:
 * which copy of the plugin (plugin.c) was loaded, or dlerror's text, exactly. Built with a
 * DT_RUNPATH and with a DT_RPATH of $ORIGIN/a: glibc searches the calling object's run path,
 * so the tracer's dlopen wrapper must leave every answer as it is untraced. A name given as
 * "noload:NAME" is opened with RTLD_NOLOAD, "-" is NULL (the program itself). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void open_one(const char *arg)
{
    int noload = strncmp(arg, "noload:", 7) == 0;
    const char *name = strcmp(arg, "-") == 0 ? NULL : arg + (noload ? 7 : 0);
    dlerror();
    void *lib = dlopen(name, RTLD_NOW | (noload ? RTLD_NOLOAD : 0));
    const char *error = dlerror();
    const char *(*which)(void) = lib ? (const char *(*)(void))dlsym(lib, "plugin_which") : NULL;
    printf("%s: %s, %s, dlerror %s\n", arg, lib ? "loaded" : "null",
           which ? which() : "no plugin_which", error ? error : "none");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        open_one(argv[i]);
    return 0;
}
