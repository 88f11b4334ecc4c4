/* libzmq's calls on no socket (NULL): each fails with ENOTSOCK, untraced and traced, and the
 * shim must neither keep anything for them nor record a message. Makes CALLS calls each of
 * zmq_send and zmq_msg_send on NULL, then one message through a real pipe, then 3 sends of a
 * binary frame (no name) that fail with EAGAIN on a PUSH socket without a peer. Prints the
 * calls that failed with ENOTSOCK, with EAGAIN, and the growth of the resident set in KiB.
 * Usage: nullsock CALLS */
#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long peak_kb(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    long calls = atol(argv[1]), notsock = 0;
    zsock_t *in;
    zsock_t *out = zsys_create_pipe(&in); /* the shim and libzmq set up, before the count */
    long before = peak_kb();
    for (long i = 0; i < calls; i++) {
        notsock += zmq_send(NULL, "x", 1, 0) < 0 && errno == ENOTSOCK;
        zmq_msg_t msg;
        zmq_msg_init_size(&msg, 1);
        notsock += zmq_msg_send(&msg, NULL, 0) < 0 && errno == ENOTSOCK;
        zmq_msg_close(&msg);
    }
    long growth = peak_kb() - before;
    zstr_send(out, "HELLO");
    char *got = zstr_recv(in);
    int ok = got && strcmp(got, "HELLO") == 0;
    free(got);
    zsock_destroy(&out);
    zsock_destroy(&in);
    zsock_t *push = zsock_new(ZMQ_PUSH);
    int again = 0;
    for (int i = 0; i < 3; i++)
        again += zmq_send(zsock_resolve(push), "\x01\x02", 2, ZMQ_DONTWAIT) < 0 && errno == EAGAIN;
    zsock_destroy(&push);
    printf("{\"ground_truth\":{\"notsock\":%ld,\"growth_kb\":%ld,\"send\":%d,\"again\":%d}}\n",
           notsock, growth, ok, again);
    return ok ? 0 : 1;
}
