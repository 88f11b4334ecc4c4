#!/bin/sh
# Nothing committed is lost when the process ends through exit() called on a worker thread while
# other threads still record, nor when threads end: each one's partial block reaches the trace.
. "$(dirname "$0")/../lib.sh"

traced "$TMP/exit.trace" "$B/tests/progs/exit_in_handler" 20000 >"$TMP/exit.out" 2>"$TMP/exit.err"
check "exit from a worker: status 0" [ $? -eq 0 ]
"$DECODE" -o "$TMP/exit.jsonl" "$TMP/exit.trace"
check "exit from a worker: trace complete" [ $? -eq 0 ]
j="$TMP/exit.jsonl"
for kind in spawn send recv schedule; do
    got=$(kind_count "$j" "$kind")
    want=$(truth "$TMP/exit.out" "$kind")
    check "exit from a worker: $kind events ($got) >= counted at exit ($want)" [ "$got" -ge "$want" ]
done
begins=$(kind_count "$j" step_begin)
check "exit from a worker: step_begin events ($begins) >= counted steps" \
    [ "$begins" -ge "$(truth "$TMP/exit.out" step)" ]
check "exit from a worker: the exiting handler's step_begin is there, unmatched" \
    [ "$begins" -gt "$(kind_count "$j" step_end)" ]
equal "exit from a worker: dropped" "$(summary "$j" dropped)" 0

traced "$TMP/churn.trace" "$B/tests/progs/thread_churn" 2000 5 >"$TMP/churn.out" 2>&1
check "thread churn: status 0" [ $? -eq 0 ]
"$DECODE" -o "$TMP/churn.jsonl" "$TMP/churn.trace"
check "thread churn: decodes cleanly" [ $? -eq 0 ]
equal "thread churn: every send of 2000 threads is in the trace" \
    "$(kind_count "$TMP/churn.jsonl" send)" "$(truth "$TMP/churn.out" send)"
check "thread churn: at least 2000 threads seen" [ "$(summary "$TMP/churn.jsonl" threads)" -ge 2000 ]
equal "thread churn: dropped" "$(summary "$TMP/churn.jsonl" dropped)" 0
