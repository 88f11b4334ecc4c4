/* A shared library with one exported function that does nothing: the cheapest call a shim can
 * wrap, so that timing a loop over it traced and untraced gives the recorder's cost per event. */
int nop_send(int actor, int msg);

int nop_send(int actor, int msg)
{
    return actor + msg;
}
