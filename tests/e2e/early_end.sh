#!/bin/sh
# The process ends while the recorder is starting: exit() on the main thread, or a SIGTERM
# left at its default action, a few hundred microseconds after another thread's first event
# began the start. Every run leaves either nothing (it ended before the start began) or a
# complete trace, and never a ring file or an empty trace.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/early_end"
RINGS="$TMP/rings"
mkdir -p "$RINGS"
RUNS=12
# 4 MiB blocks: the 4 blocks ready at start take some milliseconds to fault in, so that the
# end lands inside the start
SLOW="ACTORTRACE_BLOCK_KB=4096 ACTORTRACE_BUFFER_MB=64"

for how in exit term; do
    bad=0 traces=0
    for run in $(seq $RUNS); do
        t="$TMP/$how$run.trace"
        limit env $SLOW ACTORTRACE_RING_DIR="$RINGS" ACTORTRACE_OUT="$t" LD_PRELOAD="$LIB_NOP" \
            "$P" $how $(((run - 1) * 100)) 2>"$TMP/$how$run.err"
        if [ -e "$t" ]; then
            traces=$((traces + 1))
            "$DECODE" -o "$TMP/$how$run.jsonl" "$t" 2>>"$TMP/$how.decode.err" || bad=$((bad + 1))
        fi
        if [ -n "$(ls -A "$RINGS")" ]; then
            bad=$((bad + 1))
            rm -f "$RINGS"/*
        fi
    done
    equal "$how during start-up: runs leaving an unfinished trace or a ring file" $bad 0
    check "$how during start-up: the start had begun in some runs ($traces of $RUNS)" [ $traces -gt 0 ]
done
