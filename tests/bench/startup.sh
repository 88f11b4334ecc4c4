#!/bin/sh
# Start-up cost: the CPU time (every thread, perf's task-clock) of a program that records one
# event, untraced and traced at two buffer sizes, in interleaved rounds; medians of the rounds.
# The recorder should cost at most 2 ms whatever ACTORTRACE_BUFFER_MB (issue 12, item 3).
# Usage: tests/bench/startup.sh [ROUNDS]
set -u
cd "$(dirname "$0")/../.."
B=build
ROUNDS=${1:-${RUNS:-5}}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/actortrace-startup.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
P="$B/tests/progs/early_end"
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
cpu_ms() { # cpu_ms OUT [VAR=VALUE...]: task-clock ms of 10 runs' mean, appended to OUT
    local out="$1"
    shift
    env "$@" perf stat -x, -e task-clock -r 10 "$P" none 0 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}' >>"$out"
    rm -f "$TMP"/*.trace*
}
echo "== start-up: CPU ms of a program that records one event, $ROUNDS rounds of 10 runs"
for _ in $(seq "$ROUNDS"); do
    cpu_ms "$TMP/plain"
    for mb in 32 512; do
        cpu_ms "$TMP/mb$mb" ACTORTRACE_BUFFER_MB=$mb ACTORTRACE_OUT="$TMP/s-%p.trace" \
            LD_PRELOAD="$B/bench/libactortrace-bench.so"
    done
done
plain=$(median <"$TMP/plain")
for mb in 32 512; do
    awk -v p="$plain" -v t="$(median <"$TMP/mb$mb")" -v mb=$mb 'BEGIN {
        printf "  ACTORTRACE_BUFFER_MB=%d: %.2f ms traced, %.2f ms untraced: start-up %.2f ms (target <= 2)\n", mb, t, p, t - p }'
done
