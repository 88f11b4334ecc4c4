/* Recording on a thread with little stack left.
 *
 * measure: on a thread with a 1 MiB stack, how much stack a call to nop_send uses, measured by
 *   painting the stack below the caller with a pattern and finding the deepest byte the call
 *   changed: the process's first event (the recorder's start and the thread's first block),
 *   the thread's next event, and, on a second such thread, its first event and its next
 *   (with ACTORTRACE_STACKS=send: the captures, the first of which loads libunwind's caches).
 *   Prints {"stack_use":{"start":B,"send":B,"thread_first":B,"thread_send":B}}.
 * deep STACK_KB USED_KB SENDS [MAIN_FIRST]: a thread with a STACK_KB stack uses USED_KB of it,
 *   then sends SENDS messages to actor 1; then the main thread sends SENDS to actor 2. With
 *   MAIN_FIRST, the main thread sends once to actor 3 before the thread starts (so the thread
 *   does not start the recorder). Prints {"ground_truth":{"deep_send":N,"main_send":N}}. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nop_send(int actor, int msg);

#define PAINT   (256 * 1024) /* bytes painted, within the measuring threads' 1 MiB */
#define PATTERN 0xa5

static uintptr_t top; /* the frame address of paint(): the calls measured start there */

/* Paints the stack below this frame (and below the few hundred bytes its own call uses). */
__attribute__((noinline)) static void paint(void)
{
    top = (uintptr_t)__builtin_frame_address(0);
    volatile unsigned char *low = (volatile unsigned char *)(top - 512 - PAINT);
    for (long i = 0; i < PAINT; i++)
        low[i] = PATTERN;
}

/* The bytes from the top down to the deepest one changed since paint(). */
__attribute__((noinline)) static long changed(void)
{
    volatile unsigned char *low = (volatile unsigned char *)(top - 512 - PAINT);
    long i = 0;
    while (i < PAINT && low[i] == PATTERN)
        i++;
    return (long)(top - (uintptr_t)(low + i));
}

static long use_of_send(int actor, int msg)
{
    paint();
    nop_send(actor, msg);
    return changed();
}

static long uses[4];

static void *measure_thread(void *arg)
{
    int second = arg != NULL;
    uses[2 * second] = use_of_send(1, 1);
    uses[2 * second + 1] = use_of_send(1, 2);
    return NULL;
}

static int measure(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    for (intptr_t second = 0; second < 2; second++) {
        pthread_t t;
        if (pthread_create(&t, &attr, measure_thread, (void *)second) != 0)
            return 1;
        pthread_join(t, NULL);
    }
    printf(
        "{\"stack_use\":{\"start\":%ld,\"send\":%ld,\"thread_first\":%ld,\"thread_send\":%ld}}\n",
        uses[0], uses[1], uses[2], uses[3]);
    return 0;
}

static long used_kb, sends;

/* Uses `left` KiB more of the stack (a frame of 1 KiB each, read after the call so that the
 * call is not made a jump), then sends. */
__attribute__((noinline)) static int descend(long left)
{
    volatile char frame[1024 - 64];
    frame[0] = (char)left;
    if (left > 1)
        return descend(left - 1) + frame[0];
    for (long i = 1; i <= sends; i++)
        nop_send(1, (int)i);
    return frame[0];
}

static void *deep_thread(void *unused)
{
    (void)unused;
    descend(used_kb);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "measure"))
        return measure();
    if (argc < 5 || strcmp(argv[1], "deep")) {
        fprintf(stderr, "usage: stack_room measure | deep STACK_KB USED_KB SENDS [MAIN_FIRST]\n");
        return 2;
    }
    used_kb = atol(argv[3]);
    sends = atol(argv[4]);
    long main_sends = sends;
    if (argc > 5) {
        nop_send(3, 1);
        main_sends++;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)atol(argv[2]) * 1024);
    pthread_t t;
    if (pthread_create(&t, &attr, deep_thread, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    for (long i = 1; i <= sends; i++)
        nop_send(2, (int)i);
    printf("{\"ground_truth\":{\"deep_send\":%ld,\"main_send\":%ld}}\n", sends, main_sends);
    return 0;
}
