/* Many sockets over a run, few at a time, and many distinct printable payloads: the shim's
 * tables must keep tracking new pipes and naming real commands. Creates PIPES pipes one after
 * another (zsys_create_pipe), sends "HELLO" through each and destroys it; then sends PAYLOADS
 * distinct printable one-frame messages through one pipe, then "PING" three times.
 * Prints {"ground_truth":{...}} for tests/e2e/czmq.sh. Usage: tables PIPES PAYLOADS */
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>

static int through(zsock_t *out, zsock_t *in, const char *text)
{
    zstr_send(out, text);
    char *got = zstr_recv(in);
    int ok = got && strcmp(got, text) == 0;
    free(got);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    long pipes = atol(argv[1]), payloads = atol(argv[2]), ok = 0;
    for (long i = 0; i < pipes; i++) {
        zsock_t *in;
        zsock_t *out = zsys_create_pipe(&in);
        ok += through(out, in, "HELLO");
        zsock_destroy(&out);
        zsock_destroy(&in);
        if (i % 64 == 63)
            zclock_sleep(10); /* libzmq frees closed sockets in the background: let it */
    }
    zsock_t *in;
    zsock_t *out = zsys_create_pipe(&in);
    for (long i = 0; i < payloads; i++) {
        char text[32];
        snprintf(text, sizeof text, "payload %ld", i);
        ok += through(out, in, text);
    }
    for (int i = 0; i < 3; i++)
        ok += through(out, in, "PING");
    zsock_destroy(&out);
    zsock_destroy(&in);
    printf("{\"ground_truth\":{\"hello\":%ld,\"payloads\":%ld,\"ping\":3,\"ok\":%ld}}\n", pipes,
           payloads, ok);
    return ok == pipes + payloads + 3 ? 0 : 1;
}
