/* One thread loads plugins that the tracer patches inside dlopen (each a copy of one under
 * another name, so each is a new object), while the main thread loads and unloads another
 * library in a loop: glibc's dlopen and dlclose take the loader's locks in one order, and the
 * patching, inside dl_iterate_phdr, must not take them in the other. Untraced, it ends in
 * milliseconds. Usage: dlcross OTHER PLUGIN... Prints the plugins loaded. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int nplugins;
static char **plugins;
static volatile int done;

static void *loader(void *unused)
{
    (void)unused;
    for (int i = 0; i < nplugins; i++)
        if (!dlopen(plugins[i], RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "%s\n", dlerror());
            exit(1);
        }
    done = 1;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dlcross OTHER PLUGIN...\n");
        return 2;
    }
    nplugins = argc - 2;
    plugins = argv + 2;
    pthread_t t;
    pthread_create(&t, NULL, loader, NULL);
    while (!done) {
        void *other = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!other) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        dlclose(other);
    }
    pthread_join(t, NULL);
    printf("%d plugins loaded\n", nplugins);
    return 0;
}
