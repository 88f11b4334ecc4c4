/* A libuv program traced through tests/targets/shimgen/uv.spec: a thread wakes the loop's async
 * handle SENDS times (libuv runs its callback once for several sends that come together), and a
 * timer callback on the loop queues WORKS requests on libuv's thread pool. The program's actors
 * ride in the handle's and the requests' data field, which libuv leaves to the program. Prints its
 * own counts. */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

struct actor {
    uint64_t id; /* read by the spec: offset 0 */
};

static long sends = 10000, works = 1000;
static struct actor receiver = {.id = 2}, worker = {.id = 3};
static uv_async_t async;
static uv_timer_t timer;
static uv_work_t *reqs;
static atomic_int sender_done;
static atomic_long async_calls;
static long works_run, works_done;

static void on_async(uv_async_t *handle)
{
    atomic_fetch_add(&async_calls, 1);
    if (atomic_load(&sender_done))
        uv_close((uv_handle_t *)handle, NULL);
}

/* Sends, waiting after every BATCH sends for a callback to run (so that there are many), then
 * says it is done and sends once more, so that a callback sees it. */
#define BATCH 100
static void send_all(void *unused)
{
    (void)unused;
    for (long i = 1; i <= sends; i++) {
        long calls = atomic_load(&async_calls);
        uv_async_send(&async);
        while (i % BATCH == 0 && atomic_load(&async_calls) == calls)
            sched_yield();
    }
    atomic_store(&sender_done, 1);
    uv_async_send(&async);
}

static void work(uv_work_t *req)
{
    (void)req;
    __atomic_add_fetch(&works_run, 1, __ATOMIC_RELAXED);
}

static void after_work(uv_work_t *req, int status)
{
    (void)req;
    if (status == 0)
        works_done++;
}

static void queue_all(uv_timer_t *handle)
{
    for (long i = 0; i < works; i++) {
        reqs[i].data = &worker;
        uv_queue_work(handle->loop, &reqs[i], work, after_work);
    }
    uv_close((uv_handle_t *)handle, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        sends = atol(argv[1]);
    if (argc > 2)
        works = atol(argv[2]);
    uv_loop_t *loop = uv_default_loop();
    async.data = &receiver;
    uv_async_init(loop, &async, on_async);
    reqs = calloc((size_t)works, sizeof *reqs);
    uv_timer_init(loop, &timer);
    uv_timer_start(&timer, queue_all, 0, 0);
    uv_thread_t sender;
    uv_thread_create(&sender, send_all, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_thread_join(&sender);
    uv_loop_close(loop);
    free(reqs);
    printf("{\"ground_truth\":{\"async_sends\":%ld,\"async_calls\":%ld,\"works_queued\":%ld,"
           "\"works_run\":%ld,\"works_done\":%ld}}\n",
           sends + 1, atomic_load(&async_calls), works, works_run, works_done);
    return 0;
}
