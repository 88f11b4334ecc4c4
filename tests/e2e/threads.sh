#!/bin/sh
# More live threads than the ring has blocks, at the default settings (512 blocks of 64 KiB):
# the writer takes back the blocks of threads that wait (preload/takeback.c). 2,000 threads
# record a little, meet at a barrier holding their partly filled blocks, and record again, in
# each mode; 1,000 threads record 100 events a second each for 2 s in drop mode. Every event
# is in the trace once and in its thread's order, nothing is dropped, nothing hangs.
. "$(dirname "$0")/../lib.sh"

# in_order JSONL: each thread's sends (actor = thread + 1) carry 1, 2, 3, ... in trace order;
# prints the number of actors whose sequence is whole, or "broken"
in_order() {
    jq -r 'select(.event == "send") | "\(.actor) \(.msg)"' "$1" | awk '
        { if ($2 != last[$1] + 1) bad = 1; last[$1] = $2 }
        END { if (bad) print "broken"; else print length(last) }'
}

live() { # live FILE NAME MODE ARGS...: runs many_live ARGS traced in MODE, checks the trace
    file=$TMP/$1 name=$2 mode=$3 threads=$5
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
    equal "$name: each thread's events once, in order" "$(in_order "$file.jsonl")" "$threads"
}

for mode in drop block overwrite; do
    live $mode "2000 threads at a barrier, $mode mode" $mode barrier 2000 10
done
live steady "1000 threads at 100 events/s, drop mode" drop steady 1000 100 2
