# Call stacks (docs/STACKS.md), sourced by run.sh (B, RUNS, TMP, median): the cost of a captured
# stack at depths 8 and 16, of a send when stacks are on for another kind only, and the bytes a
# stack on every send adds to a trace. Each figure is the median over RUNS interleaved pairs.

depth_run() { # depth_run DEPTH ENV-ARGS...: ns per send, traced, DEPTH frames down
    local depth=$1
    shift
    env "$@" ACTORTRACE_BUFFER_MB=256 ACTORTRACE_OUT="$TMP/stacks.d.trace" LD_PRELOAD="$B/bench/libactortrace-bench.so" \
        "$B/bench/stackdepth" "$depth" 1000000
    rm -f "$TMP/stacks.d.trace"
}

echo "== stacks: cost per captured stack (1,000,000 sends, the same stack each time), $RUNS pairs"
for depth in 8 16; do
    for i in $(seq "$RUNS"); do
        plain=$(depth_run "$depth" -u ACTORTRACE_STACKS)
        stack=$(depth_run "$depth" ACTORTRACE_STACKS=send ACTORTRACE_STACK_DEPTH="$depth")
        echo "$stack - $plain" | bc -l >>"$TMP/stacks.cost.$depth"
    done
    awk -v d="$depth" -v c="$(median <"$TMP/stacks.cost.$depth")" 'BEGIN {
        printf "  depth %d: %.0f ns per captured stack (target <= 1000 at depth 16)\n", d, c }'
done
for i in $(seq "$RUNS"); do
    plain=$(depth_run 1 -u ACTORTRACE_STACKS)
    other=$(depth_run 1 ACTORTRACE_STACKS=spawn)
    echo "$other - $plain" | bc -l >>"$TMP/stacks.other"
done
awk -v c="$(median <"$TMP/stacks.other")" 'BEGIN {
    printf "  a send while stacks are on for spawn only: %+.2f ns (the test of one bit)\n", c }'

echo "== stacks: bytes per event, pingpong 1000000 in block mode, a stack on every send or none"
for s in none send; do
    ACTORTRACE_STACKS=$([ $s = send ] && echo send) ACTORTRACE_MODE=block \
        ACTORTRACE_OUT="$TMP/stacks.pp.$s.trace" LD_PRELOAD="$B/tests/libactortrace-refrt.so" \
        "$B/examples/pingpong" 1000000 >/dev/null
done
events=$("$B/tracedecode" "$TMP/stacks.pp.none.trace" | tail -n 1 | jq .events)
awk -v a="$(stat -c %s "$TMP/stacks.pp.none.trace")" -v b="$(stat -c %s "$TMP/stacks.pp.send.trace")" -v e="$events" 'BEGIN {
    printf "  %d events: %d bytes without stacks, %d with: %+.2f bytes per event (target <= 2)\n",
        e, a, b, (b - a) / e }'
