#!/bin/sh
# A program that dies of a fault or a signal, or leaves with _exit: every event it committed
# is in the trace, which ends cleanly, and it dies exactly as it does untraced (same signal or
# status), with a handler of its own still run.
. "$(dirname "$0")/../lib.sh"
ulimit -c 0
P="$B/tests/progs/crash"
SENDS=5000
export ACTORTRACE_RING_DIR="$TMP/rings"
mkdir -p "$ACTORTRACE_RING_DIR"

# double_free: glibc aborts holding malloc's lock, for good; the trace must still end cleanly
# (the writer needs no lock a stopped thread holds), and a hang is a failure (timeout).
for how in segv bus fpe ill trap abort term int exit_ _Exit_ chain resethand double_free; do
    limit "$P" "$how" $SENDS >"$TMP/$how.plain" 2>/dev/null
    want=$?
    echo $want >"$TMP/$how.status"
    timeout -s KILL 60 env ACTORTRACE_OUT="$TMP/$how.trace" LD_PRELOAD="$LIB_NOP" \
        "$P" "$how" $SENDS >"$TMP/$how.out" 2>"$TMP/$how.err"
    got=$?
    equal "$how: exit status as untraced" "$got" "$want"
    check "$how: status is not a plain exit 0" [ "$want" -ne 0 ]
    check "$how: no tracer message on stderr" sh -c "! grep -q '^actortrace:' '$TMP/$how.err'"
    "$DECODE" -o "$TMP/$how.jsonl" "$TMP/$how.trace" 2>"$TMP/$how.decode.err"
    equal "$how: trace ends cleanly (decoder status)" $? 0
    equal "$how: every send committed before the end is in the trace" \
        "$(sends_of "$TMP/$how.jsonl" 1)" "$(truth "$TMP/$how.out" send)"
    equal "$how: not truncated" "$(summary "$TMP/$how.jsonl" truncated)" false
done
check "chain: the program's own handler ran" grep -q "program handler ran" "$TMP/chain.out"
# SA_RESETHAND: the disposition is the default from the handler's start, and what the handler
# installs stays (before, the default replaced it once the handler returned, and the handler
# that raised its signal again ran again, and again)
equal "resethand: a one-shot handler that installs itself again runs for each signal" \
    "$(grep -c "one-shot handler ran" "$TMP/resethand.out")" 3
equal "resethand: a one-shot handler that raises its signal again runs once" \
    "$(grep -c "dying handler ran" "$TMP/resethand.out")" 1
# Started with SIGINT ignored, as a shell starts a background job, the int case still dies of
# SIGINT, untraced and traced, instead of waiting in pause() for ever. (timeout would give it
# back the default action, so the shell that ignores it runs the program itself.)
timeout -s KILL 30 sh -c 'trap "" INT; exec "$0" int 10 >/dev/null 2>&1' "$P"
equal "int, SIGINT ignored by the parent: dies of SIGINT untraced" $? 130
timeout -s KILL 30 env ACTORTRACE_OUT="$TMP/ign.trace" LD_PRELOAD="$LIB_NOP" \
    sh -c 'trap "" INT; exec "$0" int 10 >/dev/null 2>&1' "$P"
status=$?
equal "int, SIGINT ignored by the parent: dies of SIGINT traced" $status 130
[ $status -eq 130 ] && "$DECODE" -o "$TMP/ign.jsonl" "$TMP/ign.trace" 2>/dev/null
equal "int, SIGINT ignored by the parent: every send is in the trace" \
    "$([ $status -eq 130 ] && sends_of "$TMP/ign.jsonl" 1)" 10
for run in 1 2 3; do
    timeout -s KILL 60 env ACTORTRACE_OUT="$TMP/df$run.trace" LD_PRELOAD="$LIB_NOP" \
        "$P" double_free $SENDS >/dev/null 2>&1
    equal "double_free, run $run: dies as untraced" $? "$(cat "$TMP/double_free.status")"
    "$DECODE" "$TMP/df$run.trace" 2>/dev/null | tail -n 1 >"$TMP/df$run.summary"
    equal "double_free, run $run: the trace has its end" "$(jq .truncated "$TMP/df$run.summary")" false
done
check "no ring file left behind" [ -z "$(ls -A "$ACTORTRACE_RING_DIR")" ]

# SIGTERM at its default action ends every thread at once; traced, the other threads must not
# run on while the trace is finished. 8 threads send and print a line per send without pause;
# the first reads the clock and sends SIGTERM to the process (which the kernel gives to it).
# Block mode, so that every send recorded is in the trace. In each of 5 runs, per thread: no
# line printed for a send that is not in the trace (nothing done after the trace was taken).
# Over the runs, the median of the lines printed and of the events recorded after the
# signal's time: 1000 at most (the threads are stopped within the 0.1-0.3 ms the handler takes
# to reach them, unless the handler's thread is preempted meanwhile; untraced, 0 to 49 lines in
# 30 runs). Before, 2,000 to 26,000 lines came after the signal, many for sends the trace does
# not have.
TB="$B/tests/progs/term_busy"
: >"$TMP/tb.after"
for run in 1 2 3 4 5; do
    timeout -s KILL 60 "$TB" 8 100 "$TMP/tb$run.plain_time" >"$TMP/tb$run.plain"
    plain_status=$?
    timeout -s KILL 60 env ACTORTRACE_OUT="$TMP/tb$run.trace" ACTORTRACE_MODE=block \
        LD_PRELOAD="$LIB_NOP" "$TB" 8 100 "$TMP/tb$run.time" >"$TMP/tb$run.out" 2>"$TMP/tb$run.err"
    equal "term_busy $run: killed by SIGTERM, as untraced" "$?" "$plain_status"
    t=$(tr -d '\0\n' <"$TMP/tb$run.time")
    "$DECODE" -o "$TMP/tb$run.jsonl" "$TMP/tb$run.trace" 2>/dev/null
    equal "term_busy $run: the trace ends cleanly" "$?" 0
    equal "term_busy $run: nothing dropped" "$(summary "$TMP/tb$run.jsonl" dropped)" 0
    jq -r 'select(.event == "send") | "\(.actor) \(.msg)"' "$TMP/tb$run.jsonl" >"$TMP/tb$run.sends"
    check "term_busy $run: every send printed is in the trace" awk '
        NR == FNR { if ($2 > traced[$1]) traced[$1] = $2; next }
        $2 > traced[$1] { bad = 1 } END { exit bad }' "$TMP/tb$run.sends" "$TMP/tb$run.out"
    echo "$(awk -v t="$t" '$3 > t { n++ } END { print n + 0 }' "$TMP/tb$run.out")" \
        "$(jq -n --argjson t "$t" '[inputs | select(.ts_ns and .ts_ns > $t)] | length' \
            "$TMP/tb$run.jsonl")" >>"$TMP/tb.after"
done
median() { # median COLUMN: of $TMP/tb.after
    cut -d ' ' -f "$1" "$TMP/tb.after" | sort -n | sed -n 3p
}
check "term_busy: lines printed after the signal, median of 5: $(median 1) (1000 at most; all: $(
    cut -d ' ' -f 1 "$TMP/tb.after" | tr '\n' ' '))" [ "$(median 1)" -le 1000 ]
check "term_busy: events recorded after the signal, median of 5: $(median 2) (1000 at most)" \
    [ "$(median 2)" -le 1000 ]
