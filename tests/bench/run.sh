#!/bin/sh
# Benchmarks. Every figure is measured here, in this run, side by side with its baseline, as a
# median of repeated runs; nothing is asserted. Targets are from the project's issues.
set -u
cd "$(dirname "$0")/../.."
B=build
RUNS=${RUNS:-5}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/actortrace-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
now_ns() { date +%s%N; }

echo "== recording cost: nop_send() called 5,000,000 times, untraced vs traced, $RUNS runs each"
CALLS=5000000
for i in $(seq "$RUNS"); do
    "$B/bench/hotpath" --floor "$CALLS" >>"$TMP/floor"
    "$B/bench/hotpath" "$CALLS" >>"$TMP/plain"
    # a buffer big enough for every event, so the figure is the recording thread's own cost
    ACTORTRACE_BUFFER_MB=512 ACTORTRACE_OUT="$TMP/hot.trace" \
        LD_PRELOAD="$B/bench/libactortrace-bench.so" "$B/bench/hotpath" "$CALLS" >>"$TMP/traced"
    rm -f "$TMP/hot.trace"
done
floor=$(median <"$TMP/floor")
plain=$(median <"$TMP/plain")
traced=$(median <"$TMP/traced")
echo "  floor (rdtsc + 16-byte TLS store) ${floor} ns/iteration"
echo "  untraced ${plain} ns/call, traced ${traced} ns/call (medians)"
awk -v p="$plain" -v t="$traced" -v f="$floor" 'BEGIN {
    printf "  added per event: %.2f ns (target <= 12); %.2f x the floor\n", t - p, (t - p) / f }'

echo "== bytes per event on disk: pingpong 1000000 (block mode, so that every event is kept)"
time_run() { # time_run OUTPUT COMMAND...: the command's wall time in ns into OUTPUT
    local out="$1"
    shift
    local start
    start=$(now_ns)
    "$@" >/dev/null
    echo $(($(now_ns) - start)) >"$out"
}
time_run "$TMP/pp.plain.ns" "$B/examples/pingpong" 1000000
time_run "$TMP/pp.block.ns" env ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/pp.trace" \
    LD_PRELOAD="$B/libactortrace.so" "$B/examples/pingpong" 1000000
size=$(stat -c %s "$TMP/pp.trace")
"$B/tracedecode" -o "$TMP/pp.jsonl" "$TMP/pp.trace"
events=$(tail -n 1 "$TMP/pp.jsonl" | jq .events)
awk -v s="$size" -v e="$events" 'BEGIN {
    printf "  %d events in %d bytes: %.2f bytes/event (target <= 6)\n", e, s, s / e }'
awk -v p="$(cat "$TMP/pp.plain.ns")" -v t="$(cat "$TMP/pp.block.ns")" -v e="$events" 'BEGIN {
    printf "  run time traced / untraced: %.2f (%.1f million events/s recorded)\n", t / p, e / t * 1000 }'

echo "== the same run in the default drop mode: what a writer sharing 2 cores keeps up with"
ACTORTRACE_OUT="$TMP/drop.trace" LD_PRELOAD="$B/libactortrace.so" "$B/examples/pingpong" 1000000 >/dev/null
"$B/tracedecode" "$TMP/drop.trace" 2>/dev/null | tail -n 1 |
    jq -r '"  \(.events) events kept, \(.dropped) dropped (\(100 * .dropped / (.events + .dropped) | floor)%), all counted"'

echo "== tracedecode JSONL speed on that trace"
for i in $(seq "$RUNS"); do
    start=$(now_ns)
    "$B/tracedecode" -o /dev/null "$TMP/pp.trace"
    end=$(now_ns)
    echo $((end - start)) >>"$TMP/decode"
done
ns=$(median <"$TMP/decode")
awk -v n="$ns" -v e="$events" 'BEGIN {
    printf "  %.2f million events/s (median of runs; target >= 3)\n", e / n * 1000 }'
