/* Threads run a function patched at start (rt_schedule in libspin.so) in a loop while the main
 * thread, 25 ms in, loads plugins that define other patchable functions: patching them inside
 * dlopen must not disturb the running threads; nor must the patching at start disturb the
 * thread libspin.so's constructor started, which runs rt_schedule meanwhile. Usage: dlrace
 * PLUGIN... Prints the plugins' calls; exits 0 when every thread ran. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 4

long spin(const volatile int *stop);
long spin_early_stop(void);

static volatile int stop;

static void *run(void *unused)
{
    (void)unused;
    return (void *)spin(&stop);
}

int main(int argc, char **argv)
{
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, run, NULL);
    nanosleep(&(struct timespec){0, 25 * 1000 * 1000}, NULL);
    long plugin_calls = 0;
    for (int i = 1; i < argc; i++) {
        void *plugin = dlopen(argv[i], RTLD_NOW);
        long (*call)(int) = plugin ? (long (*)(int))dlsym(plugin, "call_plugin") : NULL;
        if (!call) {
            fprintf(stderr, "dlrace: %s: %s\n", argv[i], dlerror());
            return 1;
        }
        plugin_calls += call(10);
    }
    stop = 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    spin_early_stop();
    printf("plugin calls: %ld\n", plugin_calls);
    return 0;
}
