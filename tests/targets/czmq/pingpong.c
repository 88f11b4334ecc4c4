/* Ping-pong between the main thread and one zactor over the actor's pipe, in one of CZMQ's API
 * families; the last line it prints is what it did, {"ground_truth":{...}}, for
 * tests/e2e/czmq.sh to hold the trace against.
 * Usage: pingpong zstr|zsock|zmsg|zframe|zloop|zmq ROUNDS [BURST]
 *   zstr    zstr_send / zstr_recv, one frame a message
 *   zsock   zsock_send / zsock_recv, picture "si": two frames
 *   zmsg    zactor_send / zactor_recv on the main side, zmsg_send / zmsg_recv in the actor
 *   zframe  zframe_send (the first frame with ZFRAME_MORE) / zframe_recv, frame by frame
 *   zloop   the actor runs a zloop whose reader handler answers; main uses zstr. The loop also
 *           runs timers (a ticker that writes a byte into a pipe every 5 ms and ends itself
 *           after 20; one that runs three times; one that runs once; one ended before it runs)
 *           and a poller that reads that pipe a byte at a time.
 *   zmq     libzmq's own API on the pipe's sockets, as zsock_brecv and programs that mix the
 *           two use it: zmq_send / zmq_recv on the main side, zmq_msg_send / zmq_msg_recv in
 *           the actor
 * With BURST (default 1), main sends BURST pings before it reads their pongs. */
#include <czmq.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum api { ZSTR, ZSOCK, ZMSG, ZFRAME, ZLOOP, ZMQ };
static const char *const api_names[] = {"zstr", "zsock", "zmsg", "zframe", "zloop", "zmq"};

static enum api api;
/* What the program did. The actor's counts are read by main after zactor_destroy, which waits
 * for the actor to end. */
static atomic_long pings, pongs, receives, later_frames, signals, handler_calls, timer_calls,
    poller_calls;

static void send_msg(void *to, const char *command, long n)
{
    if (api == ZSOCK) {
        zsock_send(to, "si", command, (int)n);
    } else if (api == ZMSG) {
        zmsg_t *msg = zmsg_new();
        zmsg_addstr(msg, command);
        zmsg_addstrf(msg, "%ld", n);
        if (zactor_is(to))
            zactor_send(to, &msg);
        else
            zmsg_send(&msg, to);
    } else if (api == ZFRAME) {
        zframe_t *head = zframe_new(command, strlen(command));
        zframe_t *body = zframe_new(&n, sizeof n);
        zframe_send(&head, to, ZFRAME_MORE);
        zframe_send(&body, to, 0);
    } else if (api == ZMQ && zactor_is(to)) {
        zmq_send(zsock_resolve(to), command, strlen(command), 0);
    } else if (api == ZMQ) {
        zmq_msg_t msg;
        zmq_msg_init_size(&msg, strlen(command));
        memcpy(zmq_msg_data(&msg), command, strlen(command));
        if (zmq_msg_send(&msg, zsock_resolve(to), 0) < 0)
            zmq_msg_close(&msg);
    } else {
        zstr_send(to, command);
    }
}

/* Receives one message; returns its command (to free), NULL when interrupted. */
static char *recv_msg(void *from)
{
    char *command = NULL;
    if (api == ZSOCK) {
        int n;
        receives++;
        if (zsock_recv(from, "si", &command, &n) < 0)
            return NULL;
    } else if (api == ZMSG) {
        receives++;
        zmsg_t *msg = zactor_is(from) ? zactor_recv(from) : zmsg_recv(from);
        command = msg ? zmsg_popstr(msg) : NULL;
        zmsg_destroy(&msg);
    } else if (api == ZFRAME) {
        receives++;
        zframe_t *frame = zframe_recv(from);
        if (!frame)
            return NULL;
        command = zframe_strdup(frame);
        while (zframe_more(frame)) { /* the rest of the message */
            zframe_destroy(&frame);
            receives++;
            later_frames++;
            frame = zframe_recv(from);
        }
        zframe_destroy(&frame);
    } else if (api == ZMQ && zactor_is(from)) {
        receives++;
        char text[256];
        int size = zmq_recv(zsock_resolve(from), text, sizeof text - 1, 0);
        if (size < 0)
            return NULL;
        text[size < (int)sizeof text - 1 ? size : (int)sizeof text - 1] = '\0';
        command = strdup(text);
    } else if (api == ZMQ) {
        receives++;
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, zsock_resolve(from), 0) >= 0)
            command = strndup(zmq_msg_data(&msg), zmq_msg_size(&msg));
        zmq_msg_close(&msg);
    } else {
        receives++;
        command = zstr_recv(from);
    }
    return command;
}

/* Answers one message; returns -1 on $TERM. */
static int answer(zsock_t *pipe)
{
    char *command = recv_msg(pipe);
    int done = !command || strcmp(command, "$TERM") == 0;
    if (!done) {
        send_msg(pipe, "PONG", pongs);
        pongs++;
    }
    free(command);
    return done ? -1 : 0;
}

/* The zloop family's loop: it ends once $TERM has come and the ticker's bytes are all read,
 * so that every handler runs a fixed number of times whichever comes first. */
#define TICKS 20
static int ticker_id, term_seen;

static int on_pipe(zloop_t *loop, zsock_t *pipe, void *arg)
{
    (void)loop, (void)arg;
    handler_calls++;
    if (answer(pipe) == 0)
        return 0;
    term_seen = 1;
    return poller_calls == TICKS ? -1 : 0;
}

/* arg: the pipe to write a byte into, for the ticker; NULL for the other timers */
static int on_timer(zloop_t *loop, int timer_id, void *arg)
{
    static int ticks;
    timer_calls++;
    if (!arg)
        return 0;
    if (write(*(int *)arg, "t", 1) != 1)
        return -1;
    if (++ticks == TICKS && timer_id == ticker_id) /* the ticker ends itself */
        zloop_timer_end(loop, timer_id);
    return 0;
}

static int on_fd(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void)loop, (void)arg;
    char byte;
    if (read(item->fd, &byte, 1) != 1)
        return -1;
    return ++poller_calls == TICKS && term_seen ? -1 : 0;
}

static void run_loop(zsock_t *pipe)
{
    int fds[2];
    if (pipe2(fds, O_NONBLOCK) != 0)
        return;
    zloop_t *loop = zloop_new();
    zloop_reader(loop, pipe, on_pipe, NULL);
    zloop_timer(loop, 1, 3, on_timer, NULL);
    zloop_timer(loop, 2, 1, on_timer, NULL);
    zloop_timer_end(loop, zloop_timer(loop, 60000, 1, on_timer, NULL));
    zmq_pollitem_t item = {NULL, fds[0], ZMQ_POLLIN, 0};
    zloop_poller(loop, &item, on_fd, NULL);
    ticker_id = zloop_timer(loop, 5, 0, on_timer, &fds[1]); /* last: the others finish first */
    zloop_start(loop);
    zloop_destroy(&loop);
    close(fds[0]);
    close(fds[1]);
}

void pong_actor(zsock_t *pipe, void *args)
{
    (void)args;
    zsock_signal(pipe, 0);
    signals++;
    if (api == ZLOOP) {
        run_loop(pipe);
    } else {
        while (answer(pipe) == 0)
            ;
    }
}

/* Sends `burst` pings, then reads as many pongs. */
static int volley(zactor_t *actor, long burst)
{
    for (long i = 0; i < burst; i++) {
        send_msg(actor, "PING", pings);
        pings++;
    }
    for (long i = 0; i < burst; i++) {
        char *reply = recv_msg(actor);
        int pong = reply && strcmp(reply, "PONG") == 0;
        free(reply);
        if (!pong)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long rounds = argc > 2 ? atol(argv[2]) : 0, burst = argc > 3 ? atol(argv[3]) : 1;
    api = ZSTR;
    while (argc > 1 && strcmp(argv[1], api_names[api]) != 0 && api < ZMQ)
        api++;
    if (argc < 3 || argc > 4 || strcmp(argv[1], api_names[api]) != 0 || rounds < 1 || burst < 1 ||
        burst > 500) {
        fprintf(stderr, "usage: pingpong zstr|zsock|zmsg|zframe|zloop|zmq ROUNDS [BURST <= 500]\n");
        return 2;
    }
    zactor_t *actor = zactor_new(pong_actor, NULL);
    for (long done = 0; done < rounds; done += burst)
        if (volley(actor, burst < rounds - done ? burst : rounds - done) != 0)
            return 1;
    zactor_destroy(&actor);
    printf("pingpong %s: %ld rounds in bursts of %ld\n", api_names[api], (long)pings, burst);
    /* zactor_new and zactor_destroy each wait (zsock_wait) for a signal from the actor's
     * thread: the one the task sends when ready, and the one zactor sends when the task has
     * returned; zactor_destroy sends $TERM. Each actor's task is one step. A receive that
     * takes a later frame of a message takes no new message. */
    long actors = 1;
    printf("{\"ground_truth\":{\"actors\":%ld,\"ping\":%ld,\"pong\":%ld,\"term\":%ld,"
           "\"signal\":%ld,\"park\":%ld,\"later_frames\":%ld,\"steps\":%ld,\"reader_steps\":%ld,"
           "\"timer_steps\":%ld,\"poller_steps\":%ld}}\n",
           actors, (long)pings, (long)pongs, actors, (long)signals + actors,
           (long)receives + 2 * actors, (long)later_frames,
           actors + (long)handler_calls + (long)timer_calls + (long)poller_calls,
           (long)handler_calls, (long)timer_calls, (long)poller_calls);
    return 0;
}
