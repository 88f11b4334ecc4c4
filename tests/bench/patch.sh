# Entry patching's costs (docs/PATCHING.md), sourced by tests/bench/run.sh (its B, RUNS, TMP and
# median): the cost per event of a wrapper reached through a patched entry against the same
# wrapper reached through the PLT, and the start-up time patching adds. Figures are medians of
# interleaved runs; nothing is asserted.
LIB="$B/bench/libactortrace-bench.so"
PATCH_LIB="$B/bench/libactortrace-patchbench.so" # the same, nop_send patchable

echo "== patched entry vs PLT: nop_send() 5,000,000 times, linked in (patched) or from libnop.so"
CALLS=5000000
traced() { # traced LIB PROGRAM ARGS...
    local lib=$1
    shift
    ACTORTRACE_BUFFER_MB=512 ACTORTRACE_OUT="$TMP/t.trace" LD_PRELOAD="$lib" "$@"
    rm -f "$TMP/t.trace"
}
for i in $(seq "$RUNS"); do
    "$B/bench/hotpath-static" "$CALLS" >>"$TMP/static.plain"
    traced "$PATCH_LIB" "$B/bench/hotpath-static" "$CALLS" >>"$TMP/static.traced"
    "$B/bench/hotpath" "$CALLS" >>"$TMP/plt.plain"
    traced "$LIB" "$B/bench/hotpath" "$CALLS" >>"$TMP/plt.traced"
done
awk -v sp="$(median <"$TMP/static.plain")" -v st="$(median <"$TMP/static.traced")" \
    -v pp="$(median <"$TMP/plt.plain")" -v pt="$(median <"$TMP/plt.traced")" 'BEGIN {
    printf "  linked in: untraced %.2f, traced %.2f ns/call: added %.2f ns per event\n", sp, st, st - sp
    printf "  via PLT:   untraced %.2f, traced %.2f ns/call: added %.2f ns per event\n", pp, pt, pt - pp
    printf "  patched - PLT: %.2f ns per event (target: within 1 ns)\n", (st - sp) - (pt - pp) }'
# the fastest traced run of each: on a busy machine, the one least disturbed by other work
awk -v s="$(sort -n "$TMP/static.traced" | head -n 1)" -v p="$(sort -n "$TMP/plt.traced" | head -n 1)" \
    'BEGIN { printf "  fastest traced runs: linked in %.2f, via PLT %.2f ns/call\n", s, p }'

# Start-up: a program that exits before its first call of a patched function records no event,
# so the recorder never starts and the difference is the patching alone (reading every object's
# symbols included).
startup() { # startup NAME LIB PROGRAM ARGS...: patching on vs off, medians of STARTS pairs
    local name=$1 lib=$2
    shift 2
    for i in $(seq "$STARTS"); do
        for patch in 1 0; do
            start=$(date +%s%N)
            ACTORTRACE_PATCH=$patch LD_PRELOAD="$lib" "$@" >/dev/null 2>&1
            echo $(($(date +%s%N) - start)) >>"$TMP/$name.$patch"
        done
    done
    awk -v on="$(median <"$TMP/$name.1")" -v off="$(median <"$TMP/$name.0")" 'BEGIN {
        printf "  process run: %.3f ms patching, %.3f ms not: %.3f ms added\n",
            on / 1e6, off / 1e6, (on - off) / 1e6 }'
}
STARTS=$((20 * RUNS))
echo "== start-up, $STARTS runs each: the static pingpong (9 functions patched)"
startup pingpong "$B/tests/libactortrace-refrt.so" "$B/static/pingpong" not-a-number
echo "== start-up, $STARTS runs each: 100 functions patched (tests/bench/many.sh; target <= 1 ms)"
startup many "$B/bench/many/libactortrace-many.so" "$B/bench/many/prog"
# The product declares the Aether shim's functions patchable, so every traced program reads its
# objects' symbol tables at start, whether or not anything is to be patched: a CZMQ program
# (about 30 objects, none defining them) that exits at once.
echo "== start-up, $STARTS runs each: the product on a CZMQ program, nothing to patch"
startup czmq "$B/libactortrace.so" "$B/bench/czmq_pingpong"
