/* Unit tests of decoder/analysis/clocks.c: the offset estimated from matched messages between
 * two hosts (both directions, one direction, in order already, contradictory), and the grouping
 * of traces by boot id with their placement by REALTIME samples. */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "at_format.h"
#include "clocks.h"

static void test_offsets(void)
{
    /* The host's clock is 3000 ns behind: true delays 10 in and 20 out show as -2990 and 3020. */
    struct clock_offset o = at__clock_offset(5, -2990, 7, 3020);
    check(o.lower == 2991 && o.upper == 3019 && !o.conflict, "both ways: the bounds");
    check(o.applied == 3005, "both ways: half the difference of the smallest delays");
    o = at__clock_offset(5, 100, 7, 200);
    check(o.applied == 0 && o.lower == -99 && o.upper == 199, "both ways, in order: not moved");
    o = at__clock_offset(5, -500, 0, 0);
    check(o.applied == 501 && o.upper == INT64_MAX, "into the host only: the smallest shift");
    o = at__clock_offset(0, 0, 3, -700);
    check(o.applied == -701 && o.lower == INT64_MIN, "out of the host only: the smallest shift");
    o = at__clock_offset(4, 1, 0, 0);
    check(o.applied == 0, "one way, in order: not moved");
    o = at__clock_offset(2, -100, 2, -100);
    check(o.conflict && o.lower == 101 && o.upper == -101 && o.applied == 0,
          "no offset puts both ways in order: a conflict, moved by the midpoint");
    o = at__clock_offset(0, 0, 0, 0);
    check(o.applied == 0 && !o.conflict, "no messages: not moved");
    o = at__clock_offset(1, INT64_MIN, 1, INT64_MIN);
    check(o.lower == INT64_MAX && o.upper == INT64_MIN && o.conflict,
          "delays at the ends of the range (a damaged trace): held within range");
}

/* Random offsets and delays: the truth is within the bounds, and so is the estimate, which
 * puts every message in order. */
static void test_random(void)
{
    int contained = 1, ordered = 1;
    for (int round = 0; round < 1000; round++) {
        int64_t truth = (int64_t)(rnd() % 20000000000ull) - 10000000000ll;
        int64_t delays[2][16], min[2] = {INT64_MAX, INT64_MAX};
        uint64_t n[2] = {rnd() % 16, rnd() % 16};
        for (int dir = 0; dir < 2; dir++)
            for (uint64_t i = 0; i < n[dir]; i++) {
                int64_t real = 1 + (int64_t)(rnd() % 1000000);
                delays[dir][i] = dir == 0 ? real - truth : real + truth; /* as placed */
                min[dir] = delays[dir][i] < min[dir] ? delays[dir][i] : min[dir];
            }
        struct clock_offset o = at__clock_offset(n[0], min[0], n[1], min[1]);
        contained &=
            !o.conflict && (n[0] == 0 || o.lower <= truth) && (n[1] == 0 || truth <= o.upper);
        for (uint64_t i = 0; i < n[0]; i++)
            ordered &= delays[0][i] + o.applied >= 1;
        for (uint64_t i = 0; i < n[1]; i++)
            ordered &= delays[1][i] - o.applied >= 1;
    }
    check(contained, "random offsets: the true offset is within the bounds");
    check(ordered, "random offsets: after the estimate, every recv follows its send");
}

static struct trace make_trace(const char *boot, int64_t real_minus_mono, uint64_t mono)
{
    struct trace t = {.path = boot};
    t.process.boot_id = (char *)boot;
    t.process.host = (char *)"h";
    struct clock_sample s[] = {
        {1000, mono, mono + (uint64_t)real_minus_mono},
        {2000, mono + 1000, mono + 1000 + (uint64_t)real_minus_mono + 7}, /* REALTIME slewed */
    };
    at__clock_init(&t.clock, s, 2);
    return t;
}

static uint64_t ns_at(const struct trace *t, uint64_t tsc)
{
    size_t hint = 0;
    return at__clock_ns(&t->clock, tsc, &hint);
}

static void test_placement(void)
{
    struct trace traces[4] = {
        make_trace("boot-a", 1000000, 5000),
        make_trace("boot-b", 900000, 7000000),
        make_trace("", 1000000, 9000),
        make_trace("boot-a", 1000000, 11000),
    };
    struct decode d = {.traces = traces, .ntraces = 4};
    check(at__clocks_place(&d) == 0 && d.clocks, "two boots: two hosts");
    check(ns_at(&traces[0], 1000) == 5000 && ns_at(&traces[3], 1000) == 11000 &&
              ns_at(&traces[2], 1000) == 9000,
          "the first file's host, and a trace without a boot id, keep MONOTONIC exactly");
    /* medians: 1000007 (of six samples, the fourth) and 900007 */
    check(ns_at(&traces[1], 1000) == 7000000 - 100000 &&
              ns_at(&traces[1], 2000) == 7001000 - 100000,
          "another host moves by the difference of the medians of REALTIME - MONOTONIC");
    char buf[2048];
    *at__clocks_json(buf, &d) = '\0';
    check(strstr(buf, "\"realtime_shift_ns\":-100000") && strstr(buf, "\"realtime_spread_ns\":7") &&
              strstr(buf, "\"files\":3"),
          "the report: each host's shift, spread and files");
    at__clocks_free(&d);
    for (int i = 0; i < 4; i++)
        at__clock_free(&traces[i].clock);

    struct trace one[2] = {make_trace("boot-a", 5, 1), make_trace("boot-a", 5, 2)};
    d = (struct decode){.traces = one, .ntraces = 2};
    check(at__clocks_place(&d) == 0 && !d.clocks && ns_at(&one[1], 1000) == 2,
          "one boot: nothing moved, no report");
    for (int i = 0; i < 2; i++)
        at__clock_free(&one[i].clock);
}

/* A PROCESS record with the boot id and host name, and one without (before minor version 2). */
static void test_process_record(void)
{
    static const uint8_t with[] = {
        AT_META_PROCESS, 14, 7, 1, 64, 0, 1, 'x', 0, 3, 'b', '-', '1', 2, 'h', '1'};
    static const uint8_t without[] = {AT_META_PROCESS, 7, 9, 1, 64, 0, 1, 'y', 0};
    struct trace t = {0};
    check(at__meta_load(&t, with, sizeof with, 1) == 0 && t.process.pid == 7 &&
              strcmp(t.process.boot_id, "b-1") == 0 && strcmp(t.process.host, "h1") == 0,
          "PROCESS: boot id and host name read");
    check(at__meta_load(&t, without, sizeof without, 1) == 0 && t.process.pid == 9 &&
              strcmp(t.process.boot_id, "") == 0 && strcmp(t.process.host, "") == 0,
          "PROCESS of an older trace: no boot id, no host name");
    at__process_free(&t.process);
}

int main(void)
{
    test_process_record();
    test_offsets();
    test_random();
    test_placement();
    return failures ? 1 : 0;
}
