/* Unit tests of decoder/trace/clock.c: tsc -> nanoseconds by interpolation between CLOCK
 * samples, extrapolation at both ends, the one-sample and no-sample cases, monotonicity. */
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"
#include "clock.h"

static uint64_t ns_of(const struct clock_map *c, uint64_t tsc)
{
    size_t hint = 0;
    return at__clock_ns(c, tsc, &hint);
}

static void test_interpolation(void)
{
    /* 3 GHz: 3 ticks per ns between the first two; 1 tick per ns between the last two. */
    struct clock_sample s[] = {
        {.tsc = 3000000, .mono_ns = 1000000},
        {.tsc = 6000000, .mono_ns = 2000000},
        {.tsc = 7000000, .mono_ns = 3000000},
    };
    struct clock_map c;
    check(at__clock_init(&c, s, 3) == 0 && c.n == 3, "three samples are kept");
    check(ns_of(&c, 3000000) == 1000000 && ns_of(&c, 6000000) == 2000000 &&
              ns_of(&c, 7000000) == 3000000,
          "a sample's tsc converts to its mono_ns exactly");
    check(ns_of(&c, 4500000) == 1500000 && ns_of(&c, 3000003) == 1000001 &&
              ns_of(&c, 6500000) == 2500000,
          "values between samples are interpolated");
    check(ns_of(&c, 0) == 0 && ns_of(&c, 1500000) == 500000,
          "before the first sample: extrapolated from the first two");
    check(ns_of(&c, 8000000) == 4000000, "after the last sample: extrapolated from the last two");
    check(ns_of(&c, UINT64_MAX) == UINT64_MAX - 4000000, "the last tsc value extrapolates");
    at__clock_free(&c);

    struct clock_sample steep[] = {{.tsc = 10, .mono_ns = 100}, {.tsc = 11, .mono_ns = 102}};
    at__clock_init(&c, steep, 2);
    check(ns_of(&c, UINT64_MAX) == UINT64_MAX && ns_of(&c, 0) == 80,
          "2 ns a tick: far past the end clamps to UINT64_MAX instead of wrapping");
    at__clock_free(&c);

    struct clock_sample big[] = {
        {.tsc = 1ull << 62, .mono_ns = 1000000000000000001ull},
        {.tsc = (1ull << 62) + 2000000000, .mono_ns = 1000000001000000001ull},
    };
    at__clock_init(&c, big, 2);
    check(ns_of(&c, (1ull << 62) + 2) == 1000000000000000002ull,
          "nanosecond precision with large counters and a long uptime");
    at__clock_free(&c);
}

static void test_few_samples(void)
{
    struct clock_map c;
    at__clock_init(&c, NULL, 0);
    check(c.n == 0 && ns_of(&c, 12345) == 12345, "no sample: ts_ns is the raw tsc");
    at__clock_free(&c);

    struct clock_sample one = {.tsc = 1000, .mono_ns = 500};
    at__clock_init(&c, &one, 1);
    check(c.n == 1 && ns_of(&c, 1000) == 500 && ns_of(&c, 1100) == 600 && ns_of(&c, 900) == 400,
          "one sample: 1 tick = 1 ns on both sides");
    check(ns_of(&c, 0) == 0, "one sample: clamps at 0 instead of wrapping");
    at__clock_free(&c);
}

static void test_normalise(void)
{
    struct clock_sample s[] = {
        {.tsc = 300, .mono_ns = 30}, {.tsc = 100, .mono_ns = 10},
        {.tsc = 200, .mono_ns = 20}, {.tsc = 200, .mono_ns = 25}, /* same tsc: dropped */
        {.tsc = 400, .mono_ns = 5}, /* mono went backwards: raised to 30 */
    };
    struct clock_map c;
    at__clock_init(&c, s, 5);
    check(c.n == 4 && c.adjusted == 2, "duplicate tsc dropped, backward mono_ns adjusted");
    check(ns_of(&c, 150) == 15 && ns_of(&c, 250) == 25, "unsorted samples are sorted by tsc");
    check(ns_of(&c, 350) == 30 && ns_of(&c, 500) == 30, "a flat segment stays flat");
    at__clock_free(&c);
}

static int monotonic_over(const struct clock_map *c, uint64_t from, uint64_t to, uint64_t step)
{
    size_t hint = 0;
    uint64_t prev = 0;
    for (uint64_t t = from; t <= to && t >= from; t += step) {
        uint64_t ns = at__clock_ns(c, t, &hint);
        size_t fresh = 0;
        if (ns < prev || ns != at__clock_ns(c, t, &fresh))
            return 0;
        prev = ns;
    }
    return 1;
}

static void test_monotonic(void)
{
    enum { N = 200 };
    struct clock_sample s[N];
    uint64_t tsc = 1000000, mono = 5000000;
    for (int i = 0; i < N; i++) {
        s[i] = (struct clock_sample){.tsc = tsc, .mono_ns = mono};
        tsc += 1 + rnd() % 100000;
        mono += rnd() % 70000; /* slopes from 0 to far above 1 */
    }
    struct clock_map c;
    at__clock_init(&c, s, N);
    int ok = monotonic_over(&c, 0, tsc + 1000000, 7);
    check(ok, "non-decreasing over every 7th tick, hint or no hint");
    int edges = 1;
    for (int i = 1; i < N; i++) {
        uint64_t before = ns_of(&c, s[i].tsc - 1), at = ns_of(&c, s[i].tsc);
        edges &= before <= at && at == s[i].mono_ns;
    }
    check(edges, "non-decreasing across each sample, and exact at it");
    size_t hint = 0;
    int random_order = 1;
    for (int i = 0; i < 100000; i++) {
        uint64_t t = rnd() % (tsc + 2000000);
        size_t fresh = 0;
        random_order &= at__clock_ns(&c, t, &hint) == at__clock_ns(&c, t, &fresh);
    }
    check(random_order, "a stale hint gives the same answer as a fresh one");
    check(ns_of(&c, 0) <= ns_of(&c, 1) && ns_of(&c, UINT64_MAX - 1) <= ns_of(&c, UINT64_MAX),
          "extreme tsc values stay ordered");
    at__clock_free(&c);
}

int main(void)
{
    test_interpolation();
    test_few_samples();
    test_normalise();
    test_monotonic();
    return failures ? 1 : 0;
}
