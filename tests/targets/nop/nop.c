/* A shared library with one exported function that does nothing: the cheapest call a shim can
 * wrap, so that timing a loop over it traced and untraced gives the recorder's cost per event. */
int nop_send(int actor, int msg);

int nop_send(int actor, int msg)
{
    return actor + msg;
}

/* A runtime function that sends through another (through the PLT, so the wrapper sees it): in
 * a call stack its caller, not it, made the send (tests/e2e/stacks.sh, "top senders"). */
int nop_relay(int actor, int msg);

int nop_relay(int actor, int msg)
{
    return nop_send(actor, msg) + 1;
}
