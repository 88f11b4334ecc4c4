#!/bin/sh
# Overwrite mode's dump (SIGUSR2) writes the newest events too: those in the blocks threads are
# still filling. A copy of the trace taken right after the dump holds every send made before
# it, and the trace at the end holds each once.
. "$(dirname "$0")/../lib.sh"
SENDS=100003 # not a multiple of a block's slots: the last block is part full
for run in 1 2; do
    env ACTORTRACE_MODE=overwrite ACTORTRACE_OUT="$TMP/d$run.trace" LD_PRELOAD="$LIB_NOP" \
        "$B/tests/progs/crash" idle $SENDS >"$TMP/d$run.out" 2>&1 &
    pid=$!
    wait_for grep -q ground_truth "$TMP/d$run.out"
    before=$(stat -c %s "$TMP/d$run.trace")
    kill -USR2 $pid
    wait_for test "$(stat -c %s "$TMP/d$run.trace")" -gt $((before + 10000))
    size=0
    while [ "$size" != "$(stat -c %s "$TMP/d$run.trace")" ]; do # until the dump is done
        size=$(stat -c %s "$TMP/d$run.trace")
        sleep 0.3
    done
    cp "$TMP/d$run.trace" "$TMP/copy$run.trace"
    "$DECODE" --no-recover -o "$TMP/copy$run.jsonl" "$TMP/copy$run.trace" 2>/dev/null
    equal "run $run: after the dump, every send made before it is in the trace" \
        "$(sends_of "$TMP/copy$run.jsonl" 1)" $SENDS
    kill -TERM $pid
    wait $pid 2>/dev/null
    "$DECODE" -o "$TMP/d$run.jsonl" "$TMP/d$run.trace"
    check "run $run: the trace ends cleanly" [ $? -eq 0 ]
    check "run $run: each send once, in order" jq -n -e --argjson n $SENDS '
        reduce (inputs | select(.event == "send" and .actor == 1) | .msg) as $m
            ({ok: true, next: 1}; {ok: (.ok and $m == .next), next: ($m + 1)})
        | .ok and .next == $n + 1' "$TMP/d$run.jsonl"
done
