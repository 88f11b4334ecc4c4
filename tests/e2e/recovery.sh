#!/bin/sh
# SIGKILL at a random moment of a long run: the events committed before the kill are in the
# ring file, and tracedecode recovers them without being asked: for each thread, every send up
# to the last one that had returned (the program's own record, in a shared file) decodes, in
# order, none twice, and the recovered ones are marked. Run 4 has 4 KiB blocks, which the writer
# puts several to a frame: a block in a frame the writer wrote just before the kill is still in
# the ring, and must not be recovered again. Run 5 is run 4 with the predicted encoding
# (ACTORTRACE_ENCODING=predicted): recovered columns follow predicted frames. A killed process
# that is still a zombie (its parent has not reaped it) runs no thread: it is recovered too; a
# process whose first thread left while others run is still running.
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

# a zombie: killed, not reaped by its parent (a shell that became `sleep`), which runs no
# thread and is recovered as if gone
sh -c 'env ACTORTRACE_OUT="$1" LD_PRELOAD="$2" "$3" "$4" 2>/dev/null & echo $! >"$5"; exec sleep 30' \
    zombie "$TMP/z.trace" "$LIB_NOP" "$P" "$TMP/z.progress" "$TMP/z.pid" &
parent=$!
sleep 0.3
zpid=$(cat "$TMP/z.pid")
kill -KILL "$zpid"
for i in $(seq 100); do
    [ "$(awk '{ print $3 }' "/proc/$zpid/stat" 2>/dev/null)" = Z ] && break
    sleep 0.05
done
check "zombie: the killed process is a zombie while decoded" \
    [ "$(awk '{ print $3 }' "/proc/$zpid/stat")" = Z ]
"$DECODE" -o "$TMP/z.jsonl" "$TMP/z.trace" 2>"$TMP/z.err"
check "zombie: not said to be running" sh -c "! grep -q 'still running' '$TMP/z.err'"
check "zombie: events recovered ($(summary "$TMP/z.jsonl" recovered))" \
    [ "$(summary "$TMP/z.jsonl" recovered)" -gt 0 ]
check "zombie: every send that returned" jq -n -e --argjson want "$(progress "$TMP/z.progress" 0)" \
    '[inputs | select(.event == "send" and .actor == 1)] | length >= $want' "$TMP/z.jsonl"
kill "$parent"
wait "$parent" 2>/dev/null
rm -f "$ACTORTRACE_RING_DIR"/*

# the main thread left with pthread_exit, two threads still send: the process runs, and its
# ring is left alone
env ACTORTRACE_OUT="$TMP/l.trace" LD_PRELOAD="$LIB_NOP" "$P" "$TMP/l.progress" leader_exits \
    2>/dev/null &
pid=$!
sleep 0.3
check "leader exited: its first thread is a zombie" [ "$(awk '{ print $3 }' "/proc/$pid/stat")" = Z ]
"$DECODE" -o "$TMP/l.jsonl" "$TMP/l.trace" 2>"$TMP/l.err"
check "leader exited: said to be running" grep -q 'still running' "$TMP/l.err"
equal "leader exited: nothing recovered" "$(summary "$TMP/l.jsonl" recovered)" 0
kill -KILL $pid
wait $pid 2>/dev/null
rm -f "$ACTORTRACE_RING_DIR"/*
