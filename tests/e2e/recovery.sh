#!/bin/sh
# SIGKILL at a random moment of a long run: the events committed before the kill are in the
# ring file, and tracedecode recovers them without being asked: for each thread, every send up
# to the last one that had returned (the program's own record, in a shared file) decodes, in
# order, none twice, and the recovered ones are marked. Run 4 has 4 KiB blocks, which the writer
# puts several to a frame: a block in a frame the writer wrote just before the kill is still in
# the ring, and must not be recovered again. Run 5 is run 4 with the predicted encoding
# (ACTORTRACE_ENCODING=predicted): recovered columns follow predicted frames.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/killme"
export ACTORTRACE_RING_DIR="$TMP/rings"
mkdir -p "$ACTORTRACE_RING_DIR"

progress() { # progress FILE INDEX: the last send of actor INDEX+1 that had returned
    od -A n -t u8 -j $(($2 * 8)) -N 8 "$1" | tr -d ' '
}

for run in 1 2 3 4 5; do
    [ $run -ge 4 ] && block_kb=4 || block_kb=64
    [ $run = 5 ] && encoding=predicted || encoding=columns
    # not through a shell function: $! must be the program itself
    env ACTORTRACE_OUT="$TMP/k$run.trace" ACTORTRACE_BLOCK_KB=$block_kb \
        ACTORTRACE_ENCODING=$encoding LD_PRELOAD="$LIB_NOP" "$P" "$TMP/k$run.progress" 2>/dev/null &
    pid=$!
    sleep "0.$(shuf -i 3-9 -n 1)"
    kill -KILL $pid
    wait $pid 2>/dev/null
    done1=$(progress "$TMP/k$run.progress" 0)
    done2=$(progress "$TMP/k$run.progress" 1)
    check "run $run: the ring file outlives the process" [ -n "$(ls -A "$ACTORTRACE_RING_DIR")" ]
    "$DECODE" -o "$TMP/k$run.jsonl" "$TMP/k$run.trace" 2>"$TMP/k$run.err"
    equal "run $run: decoder status 1 (the trace did not end cleanly)" $? 1
    j="$TMP/k$run.jsonl"
    check "run $run: truncated" [ "$(summary "$j" truncated)" = true ]
    recovered=$(summary "$j" recovered)
    check "run $run: events recovered from the ring file ($recovered)" [ "$recovered" -gt 0 ]
    check "run $run: the decoder says how far it got" grep -q "recovered $recovered events from the ring file .* up to ts_ns" "$TMP/k$run.err"
    equal "run $run: recovered events are marked" "$(grep -c '"recovered":true' "$j")" "$recovered"
    for actor in 1 2; do
        [ $actor = 1 ] && want=$done1 || want=$done2
        check "run $run, actor $actor: sends 1..N in order, once each, N >= $want (returned before the kill)" \
            jq -n -e --argjson want "$want" '
            reduce (inputs | select(.event == "send" and .actor == '$actor') | .msg) as $m
                ({ok: true, next: 1}; {ok: (.ok and $m == .next), next: ($m + 1)})
            | .ok and .next - 1 >= $want' "$j"
    done
    rm -f "$ACTORTRACE_RING_DIR"/*
done

# --no-recover reads the trace file alone
env ACTORTRACE_OUT="$TMP/n.trace" LD_PRELOAD="$LIB_NOP" "$P" "$TMP/n.progress" 2>/dev/null &
pid=$!
sleep 0.3
kill -KILL $pid
wait $pid 2>/dev/null
"$DECODE" --no-recover -o "$TMP/n.jsonl" "$TMP/n.trace" 2>/dev/null
equal "--no-recover: nothing recovered" "$(summary "$TMP/n.jsonl" recovered)" 0
rm -f "$ACTORTRACE_RING_DIR"/*
"$DECODE" -o "$TMP/gone.jsonl" "$TMP/n.trace" 2>"$TMP/gone.err"
check "ring file gone: the decoder says the unwritten events are lost" grep -q "cannot be read" "$TMP/gone.err"
