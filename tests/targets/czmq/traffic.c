/* Socket traffic whose views tests/e2e/czmq.sh checks: the last line printed is what the
 * program did, {"ground_truth":{...}}. Every receive is a plain zstr_recv, outside any zloop.
 * Usage:
 *   traffic fanout N    main publishes N "NEWS" then one "END" on a PUB bound to
 *                       inproc://news; two subscriber actors, connected and subscribed before
 *                       the first, each receive them all (N below 1000, the high-water mark)
 *   traffic rebind ENDPOINT N
 *                       on the main thread, twice: a PULL binds ENDPOINT (inproc://NAME or
 *                       tcp://127.0.0.1:*, whose port the second round binds again), a PUSH
 *                       connects, sends N "JOB", the PULL receives them; then both sockets are
 *                       destroyed without an unbind or a disconnect */
#include <czmq.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long n;
static atomic_long news, ends, heard[2], jobs_sent, jobs_received, rounds;

/* A subscriber: counts every message it receives, END included. */
static void sub_task(zsock_t *pipe, void *args)
{
    atomic_long *heard_here = args;
    zsock_t *sub = zsock_new_sub(">inproc://news", "");
    zsock_signal(pipe, 0);
    for (bool end = false; !end;) {
        char *text = zstr_recv(sub);
        end = !text || strcmp(text, "END") == 0;
        *heard_here += text != NULL;
        free(text);
    }
    zsock_destroy(&sub);
    zstr_send(pipe, "DONE");
    free(zstr_recv(pipe)); /* $TERM */
}

static int fanout(void)
{
    zsock_t *pub = zsock_new_pub("@inproc://news");
    zactor_t *subs[2];
    for (int i = 0; i < 2; i++)
        subs[i] = zactor_new(sub_task, &heard[i]);
    zclock_sleep(200); /* the subscriptions reach the publisher before it publishes */
    for (long i = 0; i < n; i++, news++)
        zstr_send(pub, "NEWS");
    zstr_send(pub, "END");
    ends++;
    for (int i = 0; i < 2; i++) {
        free(zstr_recv(subs[i])); /* DONE */
        zactor_destroy(&subs[i]);
    }
    zsock_destroy(&pub);
    printf("{\"ground_truth\":{\"news\":%ld,\"end\":%ld,\"heard\":[%ld,%ld]}}\n", (long)news,
           (long)ends, (long)heard[0], (long)heard[1]);
    return 0;
}

/* Binds a new PULL to endpoint; libzmq frees a destroyed socket's endpoint a moment later,
 * so a bind of the same endpoint is tried again for up to 5 s. */
static zsock_t *bind_pull(const char *endpoint)
{
    zsock_t *pull = zsock_new(ZMQ_PULL);
    for (int tries = 0; pull && tries < 500; tries++) {
        if (zsock_bind(pull, "%s", endpoint) >= 0)
            return pull;
        zclock_sleep(10);
    }
    zsock_destroy(&pull);
    return NULL;
}

/* One round: returns 0, or -1 when the endpoint could not be bound. */
static int round_on(char *endpoint, size_t size)
{
    zsock_t *pull = bind_pull(endpoint);
    if (!pull)
        return -1;
    snprintf(endpoint, size, "%s", zsock_endpoint(pull)); /* the port a wildcard got */
    zsock_t *push = zsock_new(ZMQ_PUSH);
    if (!push || zsock_connect(push, "%s", endpoint) < 0)
        return -1;
    for (long i = 0; i < n; i++, jobs_sent++)
        zstr_send(push, "JOB");
    for (long i = 0; i < n; i++, jobs_received++)
        free(zstr_recv(pull));
    zsock_destroy(&push); /* zmq_close: no unbind, no disconnect */
    zsock_destroy(&pull);
    rounds++;
    return 0;
}

static int rebind(const char *first)
{
    char endpoint[256];
    snprintf(endpoint, sizeof endpoint, "%s", first);
    int err = round_on(endpoint, sizeof endpoint);
    if (err == 0)
        err = round_on(endpoint, sizeof endpoint);
    printf("{\"ground_truth\":{\"rounds\":%ld,\"sent\":%ld,\"received\":%ld}}\n", (long)rounds,
           (long)jobs_sent, (long)jobs_received);
    return err == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "fanout") == 0) {
        n = atol(argv[2]);
        return fanout();
    }
    if (argc == 4 && strcmp(argv[1], "rebind") == 0) {
        n = atol(argv[3]);
        return rebind(argv[2]);
    }
    fprintf(stderr, "usage: traffic fanout N | traffic rebind ENDPOINT N\n");
    return 2;
}
