#!/bin/sh
# The cost of watching: the run time of a traced pingpong (1,000,000 rounds on refrt) with no
# follower, with tracedecode --follow --ring at its default pace (a read every 100 ms; it runs
# at nice 19), and with one reading as fast as it can (--poll 0), interleaved: each in turn,
# RUNS times, so that a load that comes and goes hits all three alike. Prints the medians and
# the noise: the spread (largest minus smallest) of the runs with no follower.
. "$(dirname "$0")/lib.sh"
now_ns() { date +%s%N; }
LIB="$B/tests/libactortrace-refrt.so"

one() { # one NAME [FOLLOW-OPTION...]: one traced run, its wall time in ms added to NAME
    local name="$1" trace="$TMP/live.trace" follower=
    shift
    rm -f "$trace"
    if [ "$#" -gt 0 ]; then
        "$B/tracedecode" --follow --ring "$@" -o /dev/null "$trace" 2>/dev/null &
        follower=$!
    fi
    local start=$(now_ns)
    ACTORTRACE_OUT="$trace" LD_PRELOAD="$LIB" "$B/examples/pingpong" 1000000 >/dev/null
    echo $((($(now_ns) - start) / 1000000)) >>"$TMP/live.$name"
    [ -n "$follower" ] && wait "$follower"
}

echo "== watching a running program: pingpong 1,000,000 rounds traced, $RUNS interleaved runs each"
for i in $(seq "$RUNS"); do
    one none
    one paced --poll 100
    one eager --poll 0
done
none=$(median <"$TMP/live.none")
spread=$(sort -n "$TMP/live.none" | awk 'NR == 1 {lo = $1} {hi = $1} END {print hi - lo}')
for kind in paced eager; do
    case $kind in
    paced) what="reading every 100 ms" ;;
    eager) what="reading as fast as it can" ;;
    esac
    awk -v n="$none" -v t="$(median <"$TMP/live.$kind")" -v w="$what" -v s="$spread" 'BEGIN {
        printf "  follower %s: %d ms vs %d ms without (%+.1f%%); noise (spread without): %d ms\n",
            w, t, n, 100 * (t - n) / n, s }'
done
