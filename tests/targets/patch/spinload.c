/* Loads PLUGIN (spinplug.c), whose thread calls rt_park while the tracer patches it, lets it
 * run 100 ms, and says how many calls lost their effect. Usage: spinload PLUGIN. Exits 0 when
 * none did. */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
    void *plugin = argc == 2 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!plugin) {
        fprintf(stderr, "usage: spinload PLUGIN (%s)\n", dlerror());
        return 2;
    }
    nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    long (*stop_spinning)(long *) = (long (*)(long *))dlsym(plugin, "stop_spinning");
    long total, lost = stop_spinning(&total);
    printf("%ld calls, %ld without their effect\n", total, lost);
    return lost != 0;
}
