/* CZMQ's own actor classes, traced: a zproxy forwards WORK messages from a PUSH socket to a
 * PULL socket, and a zmonitor reports when a socket starts listening on TCP and accepts a
 * connection. Prints what it saw, then {"ground_truth":{...}} for tests/e2e/czmq.sh.
 * Usage: classes MESSAGES */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int forward(long messages)
{
    zactor_t *proxy = zactor_new(zproxy, NULL);
    zstr_sendx(proxy, "FRONTEND", "PULL", "inproc://classes-front", NULL);
    zsock_wait(proxy);
    zstr_sendx(proxy, "BACKEND", "PUSH", "inproc://classes-back", NULL);
    zsock_wait(proxy);
    zsock_t *faucet = zsock_new_push(">inproc://classes-front");
    zsock_t *sink = zsock_new_pull(">inproc://classes-back");
    long forwarded = 0;
    for (long i = 0; i < messages; i++) {
        zstr_send(faucet, "WORK");
        char *work = zstr_recv(sink);
        forwarded += work && strcmp(work, "WORK") == 0;
        free(work);
    }
    printf("zproxy: %ld of %ld messages forwarded\n", forwarded, messages);
    zsock_destroy(&faucet);
    zsock_destroy(&sink);
    zactor_destroy(&proxy);
    return forwarded == messages ? 0 : 1;
}

/* Prints the monitor's events until ACCEPTED; returns how many it printed. */
static int print_events(zactor_t *monitor)
{
    int events = 0;
    for (int accepted = 0; !accepted;) {
        zmsg_t *event = zmsg_recv(monitor);
        if (!event)
            return -1;
        char *name = zmsg_popstr(event);
        printf("zmonitor: %s\n", name);
        accepted = strcmp(name, "ACCEPTED") == 0;
        events++;
        free(name);
        zmsg_destroy(&event);
    }
    return events;
}

static int monitor(void)
{
    zsock_t *server = zsock_new(ZMQ_PULL);
    zactor_t *monitor = zactor_new(zmonitor, server);
    zstr_sendx(monitor, "LISTEN", "LISTENING", "ACCEPTED", NULL);
    zstr_sendx(monitor, "START", NULL);
    zsock_wait(monitor);
    int port = zsock_bind(server, "tcp://127.0.0.1:*");
    zsock_t *client = zsock_new(ZMQ_PUSH);
    zsock_connect(client, "tcp://127.0.0.1:%d", port);
    int events = print_events(monitor);
    zactor_destroy(&monitor);
    zsock_destroy(&client);
    zsock_destroy(&server);
    return events;
}

int main(int argc, char **argv)
{
    long messages = argc > 1 ? atol(argv[1]) : 0;
    if (messages < 1) {
        fprintf(stderr, "usage: classes MESSAGES\n");
        return 2;
    }
    if (forward(messages) != 0)
        return 1;
    int events = monitor();
    if (events < 0)
        return 1;
    /* Each WORK message is sent twice: by us into the proxy, by the proxy out of it. */
    printf("{\"ground_truth\":{\"actors\":2,\"work_sends\":%ld,\"monitor_events\":%d}}\n",
           2 * messages, events);
    return 0;
}
