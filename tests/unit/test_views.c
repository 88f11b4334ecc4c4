/* Unit tests of the pieces under tracedecode's views: the two-word hash map (removal included,
 * against a plain array; ids crafted to collide), the latency histogram (percentiles against
 * sorted samples; the size of a small one), and the
 * send -> handler matcher (by message id, by mailbox order without ids, recv then step on one
 * thread, steps without recvs, and what is left unhandled), and the clock's division by a
 * precomputed inverse. */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "at_events.h"
#include "clock.h"
#include "hist.h"
#include "hmap.h"
#include "match.h"

static void test_hmap(void)
{
    enum { N = 5000 };
    static uint32_t shadow[N]; /* 0: absent, else value + 1 */
    struct hmap m = {0};
    int wrong = 0;
    for (int round = 0; round < 200000; round++) {
        uint64_t k = rnd() % N;
        struct hkey key = {k * 0x100000001ull, k % 7};
        if (rnd() % 3 == 0) {
            at__hmap_del(&m, key);
            shadow[k] = 0;
        } else {
            uint32_t v = (uint32_t)rnd();
            at__hmap_put(&m, key, v);
            shadow[k] = v + 1;
        }
    }
    size_t present = 0;
    for (uint64_t k = 0; k < N; k++) {
        uint32_t *v = at__hmap_get(&m, (struct hkey){k * 0x100000001ull, k % 7});
        present += shadow[k] != 0;
        wrong += shadow[k] ? !v || *v != shadow[k] - 1 : v != NULL;
    }
    check(wrong == 0 && m.n == present, "hmap: puts and removals agree with a plain array");
    at__hmap_free(&m);
}

/* Ids a trace chose so that they all fell in one probe run when the hash was a fixed
 * multiplication (by 0x9E3779B97F4A7C15, whose inverse is k's step here). */
static void test_hmap_crafted(void)
{
    struct hmap m = {0};
    for (uint64_t k = 1; k <= 20000; k++)
        at__hmap_put(&m, (struct hkey){k * 0xF1DE83E19937733Dull, 0}, 0);
    size_t longest = 0, run = 0;
    for (size_t i = 0; i < 2 * m.cap; i++) { /* twice round: a run may wrap */
        run = m.used[i & (m.cap - 1)] ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    check(longest < 1000, "hmap: 20,000 ids crafted against a fixed hash spread out");
    at__hmap_free(&m);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_hist(void)
{
    enum { N = 20001 };
    static uint64_t v[N];
    struct hist h = {0};
    for (int i = 0; i < N; i++) {
        v[i] = rnd() % (1u << (rnd() % 30));
        at__hist_add(&h, v[i]);
    }
    qsort(v, N, sizeof *v, by_value);
    const double ps[] = {0.01, 0.5, 0.9, 0.99, 0.999, 1.0};
    int close = 1;
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        size_t rank = (size_t)(ps[i] * N + 0.999999);
        uint64_t exact = v[rank - 1], got = at__hist_percentile(&h, ps[i]);
        uint64_t diff = got > exact ? got - exact : exact - got;
        close &= diff <= exact / 64;
    }
    check(close, "hist: percentiles within 1/64 of the exact nearest-rank values");
    check(h.max == v[N - 1] && h.count == N, "hist: exact count and maximum");
    struct hist empty = {0};
    check(at__hist_percentile(&empty, 0.5) == 0, "hist: an empty histogram reports 0");
    at__hist_free(&h);
    /* There is one per actor, and most actors of a big run handle few messages. */
    struct hist few = {0};
    at__hist_add(&few, 10);
    at__hist_add(&few, 100000);
    check(few.cap * sizeof *few.used <= 64, "hist: a histogram of 2 samples holds 64 bytes");
    at__hist_free(&few);
}

/* ---- The matcher, on events made by hand ---- */

static struct thread threads[2] = {{.tid = 1}, {.tid = 2}};
static struct trace trace = {.threads = threads, .nthreads = 2};
static const struct decode one_trace = {.traces = &trace, .ntraces = 1};
static uint64_t now;

static struct match_result feed(struct matcher *m, int thread, uint8_t kind, uint64_t actor,
                                uint64_t msg)
{
    struct at_event ev = {.kind = kind, .actor = actor, .msg = msg, .peer = 9, .name = 3};
    struct merged e = {.trace = &trace, .thread = &threads[thread], .ev = &ev, .ts_ns = now += 10};
    struct match_result r;
    if (at__match_event(m, &e, &r) < 0)
        abort();
    return r;
}

/* Three sends to actor 5 without ids, received and handled on the other thread: the k-th
 * send is the k-th receive, and the depth follows. */
static void test_match_fifo(void)
{
    struct matcher m;
    at__match_init(&m, &one_trace);
    uint64_t flows[3];
    for (int i = 0; i < 3; i++)
        flows[i] = feed(&m, 0, AT_EV_SEND, 5, 0).flow;
    int ok = m.actors[0].depth == 3;
    for (int i = 0; i < 3; i++) {
        struct match_result r = feed(&m, 1, AT_EV_RECV, 5, 0);
        ok &= r.flow == flows[i] && r.depth == (uint32_t)(2 - i);
        ok &= feed(&m, 1, AT_EV_STEP_BEGIN, 5, 0).flow == flows[i];
    }
    check(ok && m.by_order == 3 && at__match_unhandled(&m) == 0,
          "match: without ids, the k-th send to an actor is its k-th recv and step");
    at__match_free(&m);
}

/* With ids, handling out of order still pairs each step with its own send. */
static void test_match_ids(void)
{
    struct matcher m;
    at__match_init(&m, &one_trace);
    uint64_t a = feed(&m, 0, AT_EV_SEND, 5, 100).flow;
    uint64_t b = feed(&m, 0, AT_EV_SEND, 5, 200).flow;
    int ok = feed(&m, 1, AT_EV_RECV, 5, 200).flow == b;
    ok &= feed(&m, 1, AT_EV_STEP_BEGIN, 5, 200).flow == b;
    ok &= feed(&m, 1, AT_EV_STEP_BEGIN, 5, 100).flow == a; /* no recv: the step takes it */
    check(ok && m.by_id == 2 && at__match_unhandled(&m) == 0 && m.actors[0].depth == 0,
          "match: with ids, each step gets its own send, with or without a recv");
    struct match_result r = feed(&m, 1, AT_EV_STEP_BEGIN, 5, 300);
    check(r.flow == 0 && m.steps_unmatched == 1, "match: a step whose send is not traced");
    at__match_free(&m);
}

/* A recv that no step claims was handled at its recv; sends never received stay counted. */
static void test_match_leftovers(void)
{
    struct matcher m;
    at__match_init(&m, &one_trace);
    feed(&m, 0, AT_EV_SEND, 5, 0);
    feed(&m, 0, AT_EV_SEND, 5, 0);
    feed(&m, 0, AT_EV_SEND, 6, 0);
    feed(&m, 1, AT_EV_RECV, 5, 0);
    struct match_result r = feed(&m, 1, AT_EV_RECV, 5, 0);
    check(r.flow == 2 && at__match_unhandled(&m) == 1,
          "match: recvs without steps each take a send; the one never received is unhandled");
    feed(&m, 0, AT_EV_SEND, 7, 42);
    feed(&m, 0, AT_EV_SEND, 7, 42);
    check(m.superseded == 1 && at__match_unhandled(&m) == 3,
          "match: a reused message id gives up the earlier send, counted as unhandled");
    check(feed(&m, 0, AT_EV_SEND, 0, 0).flow == 0,
          "match: a send with neither receiver nor id starts no flow");
    at__match_free(&m);
}

static void test_divide(void)
{
    int exact = 1;
    for (int i = 0; i < 1000000; i++) {
        uint64_t d = 2 + rnd() % (i % 2 ? 5000000000ull : 1000), x = rnd() >> (rnd() % 64);
        uint64_t inverse = (uint64_t)(((unsigned __int128)1 << 64) / d);
        exact &= at__clock_divide(x, d, inverse) == x / d;
        exact &= at__clock_divide(UINT64_MAX - (x % d), d, inverse) == (UINT64_MAX - (x % d)) / d;
    }
    check(exact, "clock: division by a precomputed inverse is exact");
}

int main(void)
{
    test_divide();
    test_hmap();
    test_hmap_crafted();
    test_hist();
    test_match_fifo();
    test_match_ids();
    test_match_leftovers();
    return failures ? 1 : 0;
}
