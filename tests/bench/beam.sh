#!/bin/sh
# The BEAM (issue 26): a ring of 100 Erlang processes, 1000 rounds (tests/targets/beam/ring.erl,
# 200,000 messages and their receives), untraced, traced by actortrace, and traced by the BEAM's
# own tracer (erlang:trace with send and 'receive', to a process that only counts them), and
# traced by the library's floor variant (build/bench/floor: the same shims and patched entries,
# each event one rdtsc and a 16-byte store, no writer): what any rdtsc-per-event tracer with
# these wrappers can reach; and by that variant without its clock (build/bench/noclock: the
# store alone), which parts the floor into the wrappers' cost and the rdtsc's. Each round runs
# the five in turn, in an order that rotates, so that all see the same background load; the
# figures are medians of BEAM_ROUNDS rounds (default 3 x RUNS) of the ring's own time, from its
# first spawn to its last message, which leaves the emulator's start-up out, with F
# (hotpath --floor) measured after each round. The ring's time is bimodal on two cores (the
# token kept by one scheduler, or passed between the two), so the fastest run of each is printed
# too: what each costs where the ring is fastest. Target: actortrace at most 1.15 times
# untraced, with nothing dropped. Then the CPU time of the whole emulator (medians), and what
# tracing adds per event recorded.
. "$(dirname "$0")/lib.sh"

ROUNDS=${BEAM_ROUNDS:-$((3 * RUNS))}
N=100 M=1000
echo "== BEAM: ring of $N processes x $M rounds, untraced / actortrace / erlang:trace / floor variant / without its clock, $ROUNDS rounds"
if ! command -v erlc >/dev/null; then
    echo "  skipped: erl is not installed (scripts/install-deps.sh installs erlang-base)"
    return 0 2>/dev/null || exit 0
fi
erlc -o "$TMP" tests/targets/beam/ring.erl tests/targets/beam/bt.erl

ring() { # ring MODE OUT [ENV...]: the ring's microseconds into OUT, the CPU seconds of the
    # whole emulator (start-up and the writer thread included) into OUT.cpu
    mode=$1 out=$2
    shift 2
    env "$@" /usr/bin/time -f "%U %S" -o "$TMP/time" \
        erl -noshell -pa "$TMP" -s ring bench $N $M "$mode" -s init stop 2>>"$TMP/beam.err" |
        sed -n 's/.*: \([0-9]*\) us,.*/\1/p' >>"$TMP/$out"
    awk '{print $1 + $2}' "$TMP/time" >>"$TMP/$out.cpu"
}

plain() { ring plain beam.plain; }
actortrace() {
    ring plain beam.traced ACTORTRACE_OUT="$TMP/beam.trace" LD_PRELOAD="$B/libactortrace.so"
    "$B/tracedecode" "$TMP/beam.trace" 2>/dev/null | tail -n 1 >"$TMP/beam.summary"
    jq .dropped "$TMP/beam.summary" >>"$TMP/beam.dropped"
    jq .events "$TMP/beam.summary" >>"$TMP/beam.events"
    rm -f "$TMP/beam.trace"
}
erlang_trace() { ring erlang_trace beam.erlang; }
floor() {
    if [ -f "$B/bench/floor/libactortrace.so" ]; then
        ring plain beam.floor LD_PRELOAD="$B/bench/floor/libactortrace.so"
    fi
}
noclock() {
    if [ -f "$B/bench/noclock/libactortrace.so" ]; then
        ring plain beam.noclock LD_PRELOAD="$B/bench/noclock/libactortrace.so"
    fi
}

: >>"$TMP/beam.floor" # these two stay empty when the variants are not built
: >>"$TMP/beam.noclock"
set -- plain actortrace erlang_trace floor noclock
for i in $(seq "$ROUNDS"); do
    for j in 0 1 2 3 4; do # the five, starting with the (i mod 5)th
        eval "\${$(((i + j) % 5 + 1))}"
    done
    "$B/bench/hotpath" --floor 2000000 >>"$TMP/beam.F"
done
fastest() { sort -n "$TMP/$1" | head -n 1; }
awk -v p="$(median <"$TMP/beam.plain")" -v t="$(median <"$TMP/beam.traced")" \
    -v e="$(median <"$TMP/beam.erlang")" -v d="$(sort -n "$TMP/beam.dropped" | tail -n 1)" \
    -v f="$(median <"$TMP/beam.floor")" -v n="$(median <"$TMP/beam.noclock")" \
    -v F="$(median <"$TMP/beam.F")" -v p1="$(fastest beam.plain)" -v t1="$(fastest beam.traced)" \
    -v f1="$(fastest beam.floor)" -v n1="$(fastest beam.noclock)" 'BEGIN {
    printf "  untraced %.1f ms; actortrace %.1f ms (%.2fx, target <= 1.15), most dropped in a run: %d;\n",
        p / 1000, t / 1000, t / p, d
    printf "  erlang:trace %.1f ms (%.2fx); ", e / 1000, e / p
    if (f > 0 && n > 0) {
        printf "floor variant %.1f ms (%.2fx), without its clock %.1f ms (%.2fx); F %.1f ns\n",
            f / 1000, f / p, n / 1000, n / p, F
        printf "  fastest runs: untraced %.1f ms, actortrace %.2fx, floor variant %.2fx, without its clock %.2fx\n",
            p1 / 1000, t1 / p1, f1 / p1, n1 / p1
    } else
        printf "floor variants not measured (make bench builds them); F %.1f ns\n", F }'
# CPU time is less at the mercy of other work than wall time: what tracing adds, per event
awk -v p="$(median <"$TMP/beam.plain.cpu")" -v t="$(median <"$TMP/beam.traced.cpu")" \
    -v e="$(median <"$TMP/beam.erlang.cpu")" -v n="$(median <"$TMP/beam.events")" 'BEGIN {
    printf "  CPU of the whole emulator: untraced %.2f s, actortrace %.2f s (+%.0f ns for each of its %d events),\n",
        p, t, (t - p) * 1e9 / n, n
    printf "  erlang:trace %.2f s\n", e }'
