#!/bin/sh
# More live threads than the ring has blocks, at the default settings (512 blocks of 64 KiB):
# the writer takes back the blocks of threads that wait (preload/takeback.c). 2,000 threads
# record a little, meet at a barrier holding their partly filled blocks, and record again, in
# each mode; 1,000 threads record 100 events a second each for 2 s in drop mode. The
# handshake under stress: 600 threads record in bursts with pauses, and a timer's handler
# records on whichever thread it lands on, with 4 KiB blocks and a 1 MiB ring (256 blocks):
# the writer takes blocks back from threads between calls, inside calls and inside handlers,
# thousands of times. Every event is in the trace once and in its thread's order, nothing is
# dropped or torn, nothing hangs.
. "$(dirname "$0")/../lib.sh"

# in_order JSONL: each actor's sends (one actor per thread, and one per thread's handler)
# carry 1, 2, 3, ... in trace order; prints "whole" or "broken"
in_order() {
    jq -r 'select(.event == "send") | "\(.actor) \(.msg)"' "$1" | awk '
        { if ($2 != last[$1] + 1) bad = 1; last[$1] = $2 }
        END { print bad ? "broken" : "whole" }'
}

live() { # live FILE NAME MODE ARGS...: runs many_live ARGS traced in MODE, checks the trace
    file=$TMP/$1 name=$2 mode=$3
    shift 3
    ACTORTRACE_MODE=$mode traced_nop "$file.trace" timeout 60 \
        "$B/tests/progs/many_live" "$@" >"$file.out" 2>"$file.err"
    check "$name: runs traced, no hang" [ $? -eq 0 ]
    check "$name: tracer printed nothing on stderr" [ ! -s "$file.err" ]
    "$DECODE" -o "$file.jsonl" "$file.trace"
    check "$name: decodes cleanly" [ $? -eq 0 ]
    equal "$name: every event is in the trace" "$(kind_count "$file.jsonl" send)" \
        "$(truth "$file.out" send)"
    equal "$name: dropped" "$(summary "$file.jsonl" dropped)" 0
    equal "$name: torn" "$(summary "$file.jsonl" torn)" 0
    equal "$name: each thread's events once, in order" "$(in_order "$file.jsonl")" whole
}

for mode in drop block overwrite; do
    live $mode "2000 threads at a barrier, $mode mode" $mode barrier 2000 10
done
live steady "1000 threads at 100 events/s, drop mode" drop steady 1000 100 2
(
    export ACTORTRACE_BLOCK_KB=4 ACTORTRACE_BUFFER_MB=1
    live bursts "600 threads in bursts, a handler every 50 us, 256 blocks of 4 KiB" drop \
        bursts 600 3000 3000
)
