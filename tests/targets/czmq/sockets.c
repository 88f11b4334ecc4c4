/* Messages on ordinary sockets (not actor pipes), for tests/e2e/zmq.sh: the last line printed
 * is what the program did, {"ground_truth":{...}}.
 * Usage (N below 1000, the high-water mark: PUB drops what a subscriber's queue cannot hold,
 * and the outbox pipe's sender would wait for main, which reads only once it has all been sent):
 *   sockets inproc N      between CZMQ actors over inproc: PUSH/PULL (N messages, "JOB" and
 *                         "TASK" in turn), PAIR (N "PING" one way, N "PONG" back), DEALER/ROUTER
 *                         (N "REQ", each answered by a "REP" through the routing id; again
 *                         from a REQ socket, whose envelope has a delimiter), PUB/SUB
 *                         (N "NEWS" then one "END" to two subscribers); one "LOST" sent
 *                         by main on a PUSH socket without a peer, which fails; and N "OUT"
 *                         sent by an actor on a zsys_create_pipe pipe main made, all before
 *                         main first uses its end
 *   sockets server BIND FILE N
 *                         a ROUTER bound to BIND (tcp, its host or port may be a wildcard; ipc):
 *                         writes the endpoint it got to FILE, answers N "REQ" with "REP"
 *   sockets client ENDPOINT N
 *                         a DEALER connected to ENDPOINT: N "REQ", each waiting for its "REP"
 *   sockets rebind DIR N  on the main thread, N "JOB" (one fingerprint) in each of five
 *                         phases, each sent in full before any is received: PUSH 2 to PULL 1
 *                         over inproc://a; PUSH 2 disconnects and connects to PULL 3 at
 *                         inproc://b; PUSH 4 connects to inproc://a; (PULL 1 then PULL 3
 *                         receive); PUSH 6 to PULL 5 bound at ipc://DIR/c; PULL 5 unbinds it
 *                         and PULL 7 binds it, and PUSH 6 reconnects by itself (what it sends
 *                         before it has is lost or reaches PULL 5: it sends "PROBE" until one
 *                         arrives) */
#include <czmq.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long n;
static atomic_long pushed, pulled, pings, pongs, requests, replies, news, ends, heard[2], failed,
    outs;

/* Each actor does its part, tells main DONE, and waits for zactor_destroy's $TERM. */
static void finish(zsock_t *pipe)
{
    zstr_send(pipe, "DONE");
    free(zstr_recv(pipe));
}

static void pull_task(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_t *pull = zsock_new_pull("@inproc://jobs");
    zsock_signal(pipe, 0);
    for (long i = 0; i < n; i++, pulled++)
        free(zstr_recv(pull));
    zsock_destroy(&pull);
    finish(pipe);
}

static void push_task(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_t *push = zsock_new_push(">inproc://jobs");
    zsock_signal(pipe, 0);
    for (long i = 0; i < n; i++, pushed++)
        zstr_send(push, i % 2 ? "TASK" : "JOB");
    finish(pipe);
    zsock_destroy(&push);
}

static void pair_a_task(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_t *pair = zsock_new_pair("@inproc://pair");
    zsock_signal(pipe, 0);
    for (long i = 0; i < n; i++, pings++)
        zstr_send(pair, "PING");
    for (long i = 0; i < n; i++)
        free(zstr_recv(pair));
    finish(pipe);
    zsock_destroy(&pair);
}

static void pair_b_task(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_t *pair = zsock_new_pair(">inproc://pair");
    zsock_signal(pipe, 0);
    for (long i = 0; i < n; i++, pongs++) {
        free(zstr_recv(pair));
        zstr_send(pair, "PONG");
    }
    finish(pipe);
    zsock_destroy(&pair);
}

/* Answers each request with a reply through the envelope it came with (the routing id, and
 * a REQ socket's empty delimiter). */
static void serve(zsock_t *router, long count)
{
    for (long i = 0; i < count; i++, replies++) {
        zmsg_t *msg = zmsg_recv(router);
        zframe_t *request = zmsg_last(msg);
        zmsg_remove(msg, request);
        zframe_destroy(&request);
        zmsg_addstr(msg, "REP");
        zmsg_send(&msg, router);
    }
}

static void request(zsock_t *dealer, long count)
{
    for (long i = 0; i < count; i++, requests++) {
        zstr_send(dealer, "REQ");
        free(zstr_recv(dealer));
    }
}

static void router_task(zsock_t *pipe, void *args)
{
    zsock_t *router = zsock_new_router(args);
    zsock_signal(pipe, 0);
    serve(router, n);
    finish(pipe);
    zsock_destroy(&router);
}

static void dealer_task(zsock_t *pipe, void *args)
{
    zsock_t *dealer = zsock_new_dealer(args);
    zsock_signal(pipe, 0);
    request(dealer, n);
    finish(pipe);
    zsock_destroy(&dealer);
}

static void req_task(zsock_t *pipe, void *args)
{
    zsock_t *req = zsock_new_req(args);
    zsock_signal(pipe, 0);
    request(req, n);
    finish(pipe);
    zsock_destroy(&req);
}

static void pub_task(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_t *pub = zsock_new_pub("@inproc://news");
    zsock_signal(pipe, 0);
    free(zstr_recv(pipe)); /* GO: both subscribers are connected */
    for (long i = 0; i < n; i++, news++)
        zstr_send(pub, "NEWS");
    zstr_send(pub, "END");
    ends++;
    finish(pipe);
    zsock_destroy(&pub);
}

static void sub_task(zsock_t *pipe, void *args)
{
    atomic_long *count = args;
    zsock_t *sub = zsock_new_sub(">inproc://news", "");
    zsock_signal(pipe, 0);
    for (char *text; (text = zstr_recv(sub)) && strcmp(text, "END") != 0; (*count)++)
        free(text);
    finish(pipe);
    zsock_destroy(&sub);
}

static void outbox_task(zsock_t *pipe, void *args)
{
    zsock_t *outbox = args;
    zsock_signal(pipe, 0);
    for (long i = 0; i < n; i++, outs++)
        zstr_send(outbox, "OUT");
    finish(pipe);
}

/* A pipe of no actor, as Zyre's outbox: the actor sends on one end before main uses the other. */
static void run_outbox(void)
{
    zsock_t *backend;
    zsock_t *frontend = zsys_create_pipe(&backend);
    zactor_t *actor = zactor_new(outbox_task, backend);
    free(zstr_recv(actor)); /* DONE: every OUT was sent */
    for (long i = 0; i < n; i++)
        free(zstr_recv(frontend));
    zactor_destroy(&actor);
    zsock_destroy(&frontend);
    zsock_destroy(&backend);
}

/* Starts the actors (each binds or connects before zactor_new returns), waits for each DONE. */
static void run_actors(zactor_fn *const tasks[], void *const args[], int count, int go)
{
    zactor_t *actors[8];
    for (int i = 0; i < count; i++)
        actors[i] = zactor_new(tasks[i], args[i]);
    if (go >= 0) {
        zclock_sleep(200); /* subscriptions reach the publisher before it publishes */
        zstr_send(actors[go], "GO");
    }
    for (int i = 0; i < count; i++)
        free(zstr_recv(actors[i]));
    for (int i = 0; i < count; i++)
        zactor_destroy(&actors[i]);
}

static void run_inproc(void)
{
    run_actors((zactor_fn *const[]){pull_task, push_task}, (void *const[]){NULL, NULL}, 2, -1);
    run_actors((zactor_fn *const[]){pair_a_task, pair_b_task}, (void *const[]){NULL, NULL}, 2, -1);
    run_actors((zactor_fn *const[]){router_task, dealer_task},
               (void *const[]){"@inproc://router", ">inproc://router"}, 2, -1);
    run_actors((zactor_fn *const[]){router_task, req_task},
               (void *const[]){"@inproc://req", ">inproc://req"}, 2, -1);
    run_actors((zactor_fn *const[]){sub_task, sub_task, pub_task},
               (void *const[]){&heard[0], &heard[1], NULL}, 3, 2);
    zsock_t *lonely = zsock_new_push("@inproc://nobody");
    zsock_set_sndtimeo(lonely, 0);
    failed += zstr_send(lonely, "LOST") != 0;
    zsock_destroy(&lonely);
    run_outbox();
    printf("{\"ground_truth\":{\"push\":%ld,\"pull\":%ld,\"ping\":%ld,\"pong\":%ld,\"req\":%ld,"
           "\"rep\":%ld,\"news\":%ld,\"end\":%ld,\"heard\":[%ld,%ld],\"failed\":%ld,"
           "\"out\":%ld}}\n",
           (long)pushed, (long)pulled, (long)pings, (long)pongs, (long)requests, (long)replies,
           (long)news, (long)ends, (long)heard[0], (long)heard[1], (long)failed, (long)outs);
}

static int run_server(const char *bind, const char *endpoint_file)
{
    zsock_t *router = zsock_new(ZMQ_ROUTER);
    if (zsock_bind(router, "%s", bind) < 0)
        return 1;
    char *endpoint = zsock_last_endpoint(router);
    FILE *f = fopen(endpoint_file, "w");
    if (!f)
        return 1;
    fprintf(f, "%s\n", endpoint);
    fclose(f);
    free(endpoint);
    serve(router, n);
    zclock_sleep(100); /* the last reply leaves before the socket closes */
    zsock_destroy(&router);
    printf("{\"ground_truth\":{\"rep\":%ld}}\n", (long)replies);
    return 0;
}

static int run_client(const char *endpoint)
{
    zsock_t *dealer = zsock_new_dealer(NULL);
    if (zsock_connect(dealer, "%s", endpoint) != 0)
        return 1;
    request(dealer, n);
    zsock_destroy(&dealer);
    printf("{\"ground_truth\":{\"req\":%ld}}\n", (long)requests);
    return 0;
}

static zsock_t *timed_pull(const char *endpoint)
{
    zsock_t *pull = zsock_new_pull(endpoint);
    zsock_set_rcvtimeo(pull, 5000); /* a message lost fails the count, not the run */
    return pull;
}

static void push_jobs(zsock_t *push, long *sent)
{
    for (long i = 0; i < n; i++)
        *sent += zstr_send(push, "JOB") == 0;
}

static void pull_jobs(zsock_t *pull, long *received)
{
    for (char *job; *received < n && (job = zstr_recv(pull)); ++*received)
        free(job);
}

static int run_rebind(const char *dir)
{
    long sent[5] = {0}, received[5] = {0};
    char ipc[512];
    snprintf(ipc, sizeof ipc, "ipc://%s/c", dir);
    zsock_t *a = timed_pull("@inproc://a"), *p1 = zsock_new_push(">inproc://a");
    push_jobs(p1, &sent[0]);
    pull_jobs(a, &received[0]);
    zsock_disconnect(p1, "inproc://a");
    zsock_t *b = timed_pull("@inproc://b");
    zsock_connect(p1, "inproc://b");
    push_jobs(p1, &sent[1]);
    zsock_t *p2 = zsock_new_push(">inproc://a");
    push_jobs(p2, &sent[2]);
    pull_jobs(a, &received[2]);
    pull_jobs(b, &received[1]);
    zsock_t *c = timed_pull(NULL), *p3 = zsock_new_push(NULL);
    zsock_bind(c, "%s", ipc);
    zsock_connect(p3, "%s", ipc);
    push_jobs(p3, &sent[3]);
    pull_jobs(c, &received[3]);
    zsock_unbind(c, "%s", ipc);
    zsock_t *d = timed_pull(NULL);
    zsock_bind(d, "%s", ipc);
    zsock_set_rcvtimeo(c, 0);
    zsock_set_rcvtimeo(d, 100);
    char *probe = NULL;
    for (int i = 0; i < 100 && !probe; i++) {
        zstr_send(p3, "PROBE");
        free(zstr_recv(c)); /* PULL 5 ends its connections only when it is used */
        probe = zstr_recv(d);
    }
    free(probe);
    zsock_set_rcvtimeo(d, 5000);
    push_jobs(p3, &sent[4]);
    pull_jobs(d, &received[4]);
    printf(
        "{\"ground_truth\":{\"sent\":[%ld,%ld,%ld,%ld,%ld],\"received\":[%ld,%ld,%ld,%ld,%ld]}}\n",
        sent[0], sent[1], sent[2], sent[3], sent[4], received[0], received[1], received[2],
        received[3], received[4]);
    zsock_t *all[] = {a, p1, b, p2, c, p3, d};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        zsock_destroy(&all[i]);
    return 0;
}

int main(int argc, char **argv)
{
    int server = argc > 1 && strcmp(argv[1], "server") == 0;
    if (argc < 3 || (strcmp(argv[1], "inproc") != 0 && argc < 4 + server)) {
        fprintf(stderr, "usage: sockets inproc N | server BIND FILE N | client ENDPOINT N | "
                        "rebind DIR N\n");
        return 2;
    }
    n = atol(argv[argc - 1]);
    if (strcmp(argv[1], "inproc") == 0) {
        run_inproc();
        return 0;
    }
    if (strcmp(argv[1], "rebind") == 0)
        return run_rebind(argv[2]);
    if (server)
        return run_server(argv[2], argv[3]);
    return run_client(argv[2]);
}
