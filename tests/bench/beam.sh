#!/bin/sh
# The BEAM (issue 26): a ring of 100 Erlang processes, 1000 rounds (tests/beam/ring.erl,
# 200,000 messages and their receives), untraced, traced by actortrace, and traced by the BEAM's
# own tracer (erlang:trace with send and 'receive', to a process that only counts them). Each
# round runs the three in turn, in an order that rotates, so that all see the same background
# load; the figures are medians of BEAM_ROUNDS rounds (default 3 x RUNS) of the ring's own time,
# from its first spawn to its last message, which leaves the emulator's start-up out. Target:
# actortrace at most 1.15 times untraced, with nothing dropped.
. "$(dirname "$0")/lib.sh"

ROUNDS=${BEAM_ROUNDS:-$((3 * RUNS))}
N=100 M=1000
echo "== BEAM: ring of $N processes x $M rounds, untraced / actortrace / erlang:trace, $ROUNDS rounds"
if ! command -v erlc >/dev/null; then
    echo "  skipped: erl is not installed (scripts/install-deps.sh installs erlang-base)"
    return 0 2>/dev/null || exit 0
fi
erlc -o "$TMP" tests/beam/ring.erl tests/beam/bt.erl

ring() { # ring MODE OUT [ENV...]: the ring's microseconds into OUT
    mode=$1 out=$2
    shift 2
    env "$@" erl -noshell -pa "$TMP" -s ring bench $N $M "$mode" -s init stop 2>>"$TMP/beam.err" |
        sed -n 's/.*: \([0-9]*\) us,.*/\1/p' >>"$TMP/$out"
}

plain() { ring plain beam.plain; }
actortrace() {
    ring plain beam.traced ACTORTRACE_OUT="$TMP/beam.trace" LD_PRELOAD="$B/libactortrace.so"
    "$B/tracedecode" "$TMP/beam.trace" 2>/dev/null | tail -n 1 | jq .dropped >>"$TMP/beam.dropped"
    rm -f "$TMP/beam.trace"
}
erlang_trace() { ring erlang_trace beam.erlang; }

for i in $(seq "$ROUNDS"); do
    case $((i % 3)) in
    0) plain; actortrace; erlang_trace ;;
    1) actortrace; erlang_trace; plain ;;
    2) erlang_trace; plain; actortrace ;;
    esac
done
awk -v p="$(median <"$TMP/beam.plain")" -v t="$(median <"$TMP/beam.traced")" \
    -v e="$(median <"$TMP/beam.erlang")" -v d="$(sort -n "$TMP/beam.dropped" | tail -n 1)" 'BEGIN {
    printf "  untraced %.1f ms; actortrace %.1f ms (%.2fx, target <= 1.15), most dropped in a run: %d;\n",
        p / 1000, t / 1000, t / p, d
    printf "  erlang:trace %.1f ms (%.2fx)\n", e / 1000, e / p }'
