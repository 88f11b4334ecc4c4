/* Sends one message of each kind of first frame over a pipe made by zsys_create_pipe, through
 * CZMQ and through libzmq directly (each of its send and receive calls), and receives each at
 * the other end. The last line is
 * {"ground_truth":{"names":[...]}}: the name each message should carry in the trace, in order,
 * by the rule of docs/shims/czmq.md (a first frame of 1 to 32 printable characters is its own
 * name; a signal is $SIGNAL; an empty frame (empty); anything else (binary)).
 * Usage: names */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static const char *const texts[] = {
    "A",
    "AB",
    "ABC",
    "ABCD",
    "ABCDE",
    "ABCDEFG",
    "ABCDEFGH",
    "ABCDEFGHI",
    "with space",
    "0123456789abcdef0123456789abcdef",  /* 32: the longest name */
    "0123456789abcdef0123456789abcdefX", /* 33 */
    "tab\there",
};

static const char *expected(const char *text)
{
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i++)
        if (text[i] < 0x20 || text[i] > 0x7e)
            return "(binary)";
    return len > 32 ? "(binary)" : text;
}

int main(void)
{
    zsock_t *back = NULL;
    zsock_t *front = zsys_create_pipe(&back);
    printf("{\"ground_truth\":{\"names\":[");
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        zstr_send(front, texts[i]);
        zstr_free(&(char *){zstr_recv(back)});
        printf("\"%s\",", expected(texts[i]));
    }
    zframe_t *empty = zframe_new_empty();
    zframe_send(&empty, front, 0);
    zframe_t *got = zframe_recv(back);
    zframe_destroy(&got);
    zsock_signal(back, 3);
    zsock_wait(front);
    char buf[2]; /* zmq_recv cuts the frame to fit */
    zmq_send(zsock_resolve(front), "RAW", 3, ZMQ_SNDMORE);
    zmq_send(zsock_resolve(front), "PART", 4, 0);
    zmq_recv(zsock_resolve(back), buf, sizeof buf, 0);
    zmq_recv(zsock_resolve(back), buf, sizeof buf, 0);
    printf("\"(empty)\",\"$SIGNAL\",\"RAW\",");

    /* zmq_sendiov: with ZMQ_SNDMORE one message of two frames, without it two messages */
    struct iovec frames[2] = {{"IOV", 3}, {"part", 4}};
    zmq_send_const(zsock_resolve(front), "CONST", 5, 0);
    zmq_sendiov(zsock_resolve(front), frames, 2, ZMQ_SNDMORE);
    struct iovec singles[2] = {{"ONE", 3}, {"TWO", 3}};
    zmq_sendiov(zsock_resolve(front), singles, 2, 0);
    for (int i = 0; i < 4; i++) { /* CONST and ONE by zstr_recv, IOV and TWO by zmq_recviov */
        if (i % 2 == 0) {
            zstr_free(&(char *){zstr_recv(back)});
            continue;
        }
        struct iovec got_frames[4];
        size_t count = 4;
        zmq_recviov(zsock_resolve(back), got_frames, &count, 0);
        for (size_t f = 0; f < count; f++)
            free(got_frames[f].iov_base);
    }
    printf("\"CONST\",\"IOV\",\"ONE\",\"TWO\"]}}\n");
    zsock_destroy(&front);
    zsock_destroy(&back);
    return 0;
}
