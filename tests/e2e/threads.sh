#!/bin/sh
# More live threads than the ring has blocks, at the default settings (512 blocks of 64 KiB):
# the writer takes back the blocks of threads that wait (preload/takeback.c). 2,000 threads
# record a little, meet at a barrier holding their partly filled blocks, and record again, in
# each mode; 1,000 threads record 100 events a second each for 2 s in drop mode. The
# handshake under stress: 600 threads record in bursts with pauses, and a timer's handler
# records on whichever thread it lands on, with 4 KiB blocks and a 1 MiB ring (256 blocks):
# the writer takes blocks back from threads between calls, inside calls and inside handlers,
# thousands of times; and the same with a copy of the library that pauses between taking a
# block back and writing it (so that its thread records meanwhile at every take-back: a writer
# that counted the block's slots after taking it counted the new block's and lost thousands of
# events in every run). Every event is in the trace once and in its thread's order, nothing is
# dropped or torn, nothing hangs.
. "$(dirname "$0")/../lib.sh"

# in_order JSONL: each actor's sends (one actor per thread, and one per thread's handler)
# carry 1, 2, 3, ... in trace order; prints "whole", "gaps" (rising, some missing) or "broken"
in_order() {
    jq -r 'select(.event == "send") | "\(.actor) \(.msg)"' "$1" | awk '
        { if ($2 <= last[$1]) bad = 1; else if ($2 != last[$1] + 1) gaps = 1; last[$1] = $2 }
        END { print bad ? "broken" : gaps ? "gaps" : "whole" }'
}

live() { # live FILE NAME MODE ARGS...: runs many_live ARGS traced in MODE, checks the trace
    file=$TMP/$1 name=$2 mode=$3
    shift 3
    ACTORTRACE_MODE=$mode ACTORTRACE_OUT="$file.trace" LD_PRELOAD="${LIVE_LIB:-$LIB_NOP}" \
        timeout 60 "$B/tests/progs/many_live" "$@" >"$file.out" 2>"$file.err"
    check "$name: runs traced, no hang" [ $? -eq 0 ]
    check "$name: tracer printed nothing on stderr" [ ! -s "$file.err" ]
    "$DECODE" -o "$file.jsonl" "$file.trace"
    check "$name: decodes cleanly" [ $? -eq 0 ]
    equal "$name: torn" "$(summary "$file.jsonl" torn)" 0
}

exact() { # exact FILE NAME MODE ARGS...: live, and every event is in the trace, none dropped
    live "$@"
    file=$TMP/$1 name=$2
    equal "$name: every event is in the trace" "$(kind_count "$file.jsonl" send)" \
        "$(truth "$file.out" send)"
    equal "$name: dropped" "$(summary "$file.jsonl" dropped)" 0
    equal "$name: each thread's events once, in order" "$(in_order "$file.jsonl")" whole
}

counted() { # counted FILE NAME MODE ARGS...: live, and every event is in the trace or dropped
    live "$@"
    file=$TMP/$1 name=$2
    dropped=$(summary "$file.jsonl" dropped) order=$(in_order "$file.jsonl")
    equal "$name: every event is in the trace or counted as dropped ($dropped)" \
        "$(($(kind_count "$file.jsonl" send) + dropped))" "$(truth "$file.out" send)"
    check "$name: each thread's events once, in order" \
        [ "$order" = whole -o "$dropped" -gt 0 -a "$order" = gaps ]
}

for mode in drop block overwrite; do
    exact $mode "2000 threads at a barrier, $mode mode" $mode barrier 2000 10
done
exact steady "1000 threads at 100 events/s, drop mode" drop steady 1000 100 2
(
    # Overwrite mode loses the oldest events, never the newest: a thread that finds the pool
    # short while the writer can still grow it waits for the writer, however late it comes.
    # The writer sleeps 100 ms before each step (the test copy's hook), far longer than a
    # thread's own wait for growth in at__ring_take; 200 threads are fewer than half the
    # 512 blocks, so no thread waits for a take-back instead.
    export LIVE_LIB="$LIB_NOP_HOOKS" ACTORTRACE_TEST_GROW_DELAY_MS=100
    exact late_growth "200 threads at a barrier, overwrite mode, the ring grown 100 ms late" \
        overwrite barrier 200 10
)
(
    # A thread waiting for a take-back gives up only when the pool has stalled (no block freed
    # for the give-up time), not when its own wait is that long: 200 threads share 16 blocks,
    # so the last to get one wait most of the run while blocks are freed every few tens of ms.
    # The test copy's give-up is 500 ms (5 s in the product), shorter than that run; before,
    # every run of either mode dropped the events of the threads that waited longest.
    export LIVE_LIB="$LIB_NOP_HOOKS" ACTORTRACE_TEST_GIVE_UP_MS=500 ACTORTRACE_BUFFER_MB=1
    for mode in drop overwrite; do
        exact long_wait_$mode "200 threads on 16 blocks, $mode mode, waits longer than the give-up" \
            $mode barrier 200 10
    done
)
(
    # Block mode: a thread waits for a block rather than drop, so any event missing is lost.
    # In drop mode a thread that asks while the writer grows the ring waits for it 20 ms at
    # most: with 600 threads starting at once on a loaded machine, that can drop a first event.
    export ACTORTRACE_BLOCK_KB=4 ACTORTRACE_BUFFER_MB=1
    exact bursts "600 threads in bursts, a handler every 50 us, 256 blocks of 4 KiB" block \
        bursts 600 3000 3000
    counted bursts_drop "the same in drop mode" drop bursts 600 3000 3000
    export LIVE_LIB="$B/tests/libactortrace-pause.so"
    for run in 1 2 3; do
        exact pause$run "the same in block mode, 200 us between taking a block back and writing it, run $run" \
            block bursts 600 3000 3000
    done
)
