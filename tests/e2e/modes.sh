#!/bin/sh
# What happens when the writer falls behind, in each mode, on a buffer far too small for the
# run: drop counts every event it could not keep, exactly (kept + dropped = what the program
# did); block keeps everything; overwrite keeps the newest events, counts the ones it replaced,
# and writes its buffer when SIGUSR2 arrives as well as at the end.
. "$(dirname "$0")/../lib.sh"
P="$B/examples/pingpong"
SMALL="ACTORTRACE_BUFFER_MB=1 ACTORTRACE_BLOCK_KB=16"

# every event refrt counted: one send, recv, schedule, park, unpark, spawn, exit each, two per step
all_events() {
    tail -n 1 "$1" | jq '.ground_truth | .spawn + .send + .recv + 2 * .step + .schedule + .park + .unpark + .exit'
}

run_mode() { # run_mode MODE ROUNDS [VAR=VALUE...]
    mode=$1 rounds=$2
    shift 2
    limit env $SMALL "$@" ACTORTRACE_MODE="$mode" ACTORTRACE_OUT="$TMP/$mode.trace" LD_PRELOAD="$LIB" \
        "$P" "$rounds" >"$TMP/$mode.out" 2>"$TMP/$mode.err"
    check "$mode: program succeeds" [ $? -eq 0 ]
    "$DECODE" -o "$TMP/$mode.jsonl" "$TMP/$mode.trace" 2>"$TMP/$mode.decode.err"
    check "$mode: decodes (status 0 or 1 for losses only)" [ $? -le 1 ]
}

# the test copy's writer sleeps 300 ms before each pass: threads wait for it 100 ms, then drop
run_mode drop 300000 ACTORTRACE_TEST_WRITER_DELAY_MS=300
kept=$(summary "$TMP/drop.jsonl" events)
dropped=$(summary "$TMP/drop.jsonl" dropped)
check "drop: the writer fell behind ($dropped dropped)" [ "$dropped" -gt 0 ]
equal "drop: kept + dropped = every event the program made" $((kept + dropped)) "$(all_events "$TMP/drop.out")"
check "drop: each loss has a thread and a time range" jq -e \
    '.lost | length > 0 and all(.tid > 0 and .reason == "dropped" and .from_ns <= .to_ns)' \
    "$(tail -n 1 "$TMP/drop.jsonl" >"$TMP/drop.summary"; echo "$TMP/drop.summary")"
equal "drop: the per-thread losses add up" \
    "$(jq '[.lost[].count] | add' "$TMP/drop.summary")" "$dropped"

# the main thread drops until the program ends, and takes no block again to note its drops:
# the end of the trace names them (before: 2,099,600 dropped, no LOST record)
env $SMALL ACTORTRACE_TEST_WRITER_DELAY_MS=300 ACTORTRACE_OUT="$TMP/late.trace" \
    LD_PRELOAD="$LIB_NOP_HOOKS" "$B/bench/hotpath" 2000000 >/dev/null 2>&1
"$DECODE" "$TMP/late.trace" 2>/dev/null | tail -n 1 >"$TMP/late.summary"
late=$(jq .dropped "$TMP/late.summary")
check "drop, dropping at the end: the writer fell behind ($late dropped)" [ "$late" -gt 0 ]
equal "drop, dropping at the end: every drop is in a LOST record" \
    "$(jq '[.lost[].count] | add' "$TMP/late.summary")" "$late"

# a writer late by less than the 100 ms a thread waits for it before it drops: nothing is lost
# (the buffer fills in about a millisecond, so a thread that did not wait would drop for certain)
rm -f "$TMP/drop.trace"
run_mode drop 300000 ACTORTRACE_TEST_WRITER_DELAY_MS=20
equal "drop, writer 20 ms late: nothing dropped" "$(summary "$TMP/drop.jsonl" dropped)" 0
equal "drop, writer 20 ms late: every event kept" "$(summary "$TMP/drop.jsonl" events)" \
    "$(all_events "$TMP/drop.out")"

run_mode block 300000
equal "block: nothing dropped" "$(summary "$TMP/block.jsonl" dropped)" 0
equal "block: every event kept" "$(summary "$TMP/block.jsonl" events)" "$(all_events "$TMP/block.out")"

# a thread takes over the oldest full block while the writer looks for partly filled ones to
# write (preload/takeback.c): the test copy holds the writer, after it saw a block FULL, until
# a thread took that block over (ACTORTRACE_TEST_PARTIAL_WAIT_MS). When the writer did not claim
# the block before writing it, it wrote and freed blocks their new owners were filling: 3 runs
# of 3 lost 4,808 to 38,075 events of 3,001,025 uncounted.
run_mode overwrite 300000 ACTORTRACE_TEST_PARTIAL_WAIT_MS=2
equal "overwrite, blocks taken over while the writer looks at them: kept + replaced = all events" \
    $(($(summary "$TMP/overwrite.jsonl" events) + $(summary "$TMP/overwrite.jsonl" dropped))) \
    "$(all_events "$TMP/overwrite.out")"
rm -f "$TMP/overwrite.trace"

run_mode overwrite 300000
kept=$(summary "$TMP/overwrite.jsonl" events)
lost=$(summary "$TMP/overwrite.jsonl" dropped)
check "overwrite: older events were replaced ($lost)" [ "$lost" -gt 0 ]
equal "overwrite: kept + replaced = every event the program made" $((kept + lost)) "$(all_events "$TMP/overwrite.out")"
tail -n 1 "$TMP/overwrite.jsonl" >"$TMP/ow.summary"
check "overwrite: losses are marked overwritten" jq -e 'all(.lost[]; .reason == "overwritten")' "$TMP/ow.summary"
check "overwrite: the run's last events are kept" [ "$(kind_count "$TMP/overwrite.jsonl" exit)" -eq 2 ]
# what is kept is newer, per thread, than anything replaced
check "overwrite: the newest events are the ones kept" jq -n -e --slurpfile s "$TMP/ow.summary" '
    [inputs | select(.event)] | group_by(.tid)
    | map({tid: .[0].tid, first: (map(.ts_ns) | min)}) as $kept
    | all($s[0].lost[]; . as $l | all($kept[]; .tid != $l.tid or .first >= $l.to_ns))' \
    "$TMP/overwrite.jsonl"

# a dump on SIGUSR2 writes the buffer while the program runs (it made 100000 events, about
# 10 KiB with 8 blocks to a frame, and waits)
env ACTORTRACE_MODE=overwrite ACTORTRACE_OUT="$TMP/dump.trace" LD_PRELOAD="$LIB_NOP" \
    "$B/tests/progs/crash" idle 100000 >"$TMP/dump.out" 2>&1 &
pid=$!
wait_for grep -q ground_truth "$TMP/dump.out" # it has recorded its sends and waits
before=$(stat -c %s "$TMP/dump.trace")
kill -USR2 $pid
wait_for test "$(stat -c %s "$TMP/dump.trace")" -gt $((before + 4000))
after=$(stat -c %s "$TMP/dump.trace")
check "overwrite: SIGUSR2 writes the events in memory ($before -> $after bytes)" [ "$after" -gt $((before + 4000)) ]
check "overwrite: SIGUSR2 does not end the program" kill -0 $pid
kill -TERM $pid
wait $pid
"$DECODE" -o "$TMP/dump.jsonl" "$TMP/dump.trace"
check "overwrite: the trace ends cleanly after SIGTERM" [ $? -eq 0 ]
equal "overwrite: every send is there" "$(sends_of "$TMP/dump.jsonl" 1)" 100000

# Overwrite mode in a process whose threads come and go a few at a time: the partly filled
# block each ended thread leaves is written, never left to fill the pool. 600 short threads one
# after another, then 200,000 sends on the main thread: every event is kept, nothing replaced
# (before: the ended threads' blocks held the whole pool, none of the 200,000 was kept, and the
# run took 6 s instead of 0.02). On 16 blocks (26,176 events), a short thread every 1,000 sends:
# the pool holds mostly the newest events of the main thread (before: 408 of them).
OW="$B/tests/progs/overwrite_churn"
limit env ACTORTRACE_MODE=overwrite ACTORTRACE_OUT="$TMP/owc.trace" LD_PRELOAD="$LIB_NOP" \
    "$OW" 600 10 200000 0 >"$TMP/owc.out" 2>&1
check "overwrite, ended threads: program succeeds" [ $? -eq 0 ]
"$DECODE" -o "$TMP/owc.jsonl" "$TMP/owc.trace"
check "overwrite, ended threads: the trace ends cleanly" [ $? -eq 0 ]
equal "overwrite, ended threads: the short threads' sends kept" "$(sends_of "$TMP/owc.jsonl" 1)" \
    "$(truth "$TMP/owc.out" short_send)"
equal "overwrite, ended threads: the main thread's sends kept" "$(sends_of "$TMP/owc.jsonl" 2)" \
    "$(truth "$TMP/owc.out" final_send)"
equal "overwrite, ended threads: nothing replaced" "$(summary "$TMP/owc.jsonl" dropped)" 0
limit env ACTORTRACE_MODE=overwrite ACTORTRACE_BUFFER_MB=1 ACTORTRACE_OUT="$TMP/owm.trace" \
    LD_PRELOAD="$LIB_NOP" "$OW" 0 10 200000 1000 >"$TMP/owm.out" 2>&1
check "overwrite, a thread every 1000 sends: program succeeds" [ $? -eq 0 ]
"$DECODE" -o "$TMP/owm.jsonl" "$TMP/owm.trace" 2>/dev/null
kept=$(sends_of "$TMP/owm.jsonl" 2)
check "overwrite, a thread every 1000 sends: the main thread keeps 3/4 of the pool or more ($kept)" \
    [ "$kept" -ge 19632 ]
equal "overwrite, a thread every 1000 sends: its last send is kept" \
    "$(jq -c 'select(.event == "send" and .actor == 2 and .msg == 200000)' "$TMP/owm.jsonl" | wc -l)" 1
equal "overwrite, a thread every 1000 sends: kept + replaced = sent" \
    $(($(kind_count "$TMP/owm.jsonl" send) + $(summary "$TMP/owm.jsonl" dropped))) \
    $(($(truth "$TMP/owm.out" short_send) + $(truth "$TMP/owm.out" final_send)))
