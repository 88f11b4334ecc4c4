/* A GLib program traced through tests/targets/shimgen/glib.spec: a GThreadPool runs ITEMS work
 * items for one actor; a GAsyncQueue carries ITEMS messages (and a stop) from main to a consumer
 * thread that blocks in g_async_queue_pop; the default GMainContext, run by main's GMainLoop,
 * runs IDLES idle callbacks added from another thread, half with g_idle_add_full and half with
 * g_source_set_callback, each with a destroy function for its data. Prints its own counts,
 * among them how many destroy calls got the pointer given with their callback. */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TOKEN_MAGIC 0x70c3e11aU

struct actor {
    uint64_t id; /* read by the spec: offset 0 */
    gint steps;
};

struct message {
    uint64_t id; /* read by the spec: offset 0 */
};

/* The data of an idle callback: the destroy function checks it got its own. */
struct token {
    uint32_t magic;
    gint called;
};

static long items = 1000, idles = 100;
static gint idle_calls, destroyed_own, destroyed_other;
static GMainLoop *loop;

static void pool_work(gpointer item, gpointer user_data)
{
    struct actor *a = user_data;
    if (item)
        g_atomic_int_inc(&a->steps);
}

static long run_pool(void)
{
    struct actor worker = {.id = 1};
    GThreadPool *pool = g_thread_pool_new(pool_work, &worker, 2, FALSE, NULL);
    for (long i = 1; i <= items; i++)
        g_thread_pool_push(pool, GSIZE_TO_POINTER(i), NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
    printf("pool: %d steps\n", g_atomic_int_get(&worker.steps));
    return g_atomic_int_get(&worker.steps);
}

/* Pops until the message with id 0. */
static gpointer consume(gpointer queue)
{
    long taken = 0;
    for (;;) {
        struct message *m = g_async_queue_pop(queue);
        taken++;
        if (m->id == 0)
            return GSIZE_TO_POINTER(taken);
    }
}

static long run_queue(void)
{
    GAsyncQueue *queue = g_async_queue_new();
    GThread *consumer = g_thread_new("consumer", consume, queue);
    struct message *messages = g_new0(struct message, items + 1);
    for (long i = 0; i < items; i++) {
        messages[i].id = (uint64_t)i + 1;
        g_async_queue_push(queue, &messages[i]);
    }
    g_async_queue_push(queue, &messages[items]); /* id 0: stop */
    long taken = (long)GPOINTER_TO_SIZE(g_thread_join(consumer));
    printf("queue: %ld taken\n", taken);
    g_free(messages);
    g_async_queue_unref(queue);
    return taken;
}

static gboolean idle(gpointer data)
{
    struct token *t = data;
    if (t->magic == TOKEN_MAGIC)
        t->called++;
    if (g_atomic_int_add(&idle_calls, 1) + 1 == idles)
        g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

static void destroy(gpointer data)
{
    struct token *t = data;
    if (t->magic == TOKEN_MAGIC)
        g_atomic_int_inc(&destroyed_own);
    else
        g_atomic_int_inc(&destroyed_other);
}

/* Adds the idles to the default context from outside its thread. */
static gpointer add_idles(gpointer tokens)
{
    struct token *t = tokens;
    for (long i = 0; i < idles; i++) {
        t[i].magic = TOKEN_MAGIC;
        if (i % 2 == 0) {
            g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, idle, &t[i], destroy);
            continue;
        }
        GSource *source = g_idle_source_new();
        g_source_set_callback(source, idle, &t[i], destroy);
        g_source_attach(source, NULL);
        g_source_unref(source);
    }
    return NULL;
}

static void run_main_context(void)
{
    struct token *tokens = g_new0(struct token, idles);
    loop = g_main_loop_new(NULL, FALSE);
    GThread *adder = g_thread_new("adder", add_idles, tokens);
    g_main_loop_run(loop);
    g_thread_join(adder);
    g_main_loop_unref(loop);
    while (g_main_context_iteration(NULL, FALSE)) /* run what is left: there is nothing */
        ;
    long called = 0;
    for (long i = 0; i < idles; i++)
        called += tokens[i].called;
    printf("main context: %ld idles called with their data\n", called);
    g_free(tokens);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        items = atol(argv[1]);
    if (argc > 2)
        idles = atol(argv[2]);
    long steps = run_pool();
    long taken = run_queue();
    run_main_context();
    printf("{\"ground_truth\":{\"pool_sends\":%ld,\"pool_steps\":%ld,\"queue_sends\":%ld,"
           "\"queue_recvs\":%ld,\"idle_sends\":%ld,\"idle_steps\":%d,\"destroyed_own\":%d,"
           "\"destroyed_other\":%d}}\n",
           items, steps, items + 1, taken, idles, g_atomic_int_get(&idle_calls),
           g_atomic_int_get(&destroyed_own), g_atomic_int_get(&destroyed_other));
    return 0;
}
