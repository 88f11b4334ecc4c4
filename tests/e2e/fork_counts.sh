#!/bin/sh
# A forked child's totals are its own: a parent that dropped events (a 1 MiB buffer the loop
# overruns, and a writer slowed down by the test copy's hook) forks a child, and the child's trace counts only the child's losses: its sends
# kept + its losses = the sends it made, exactly, in each of several runs. A child forked before
# the parent's first event finishes its own trace and leaves no ring file.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/forker"
N=400000
bad=0 parent_drops=0
for run in 1 2 3; do
    mkdir -p "$TMP/$run"
    limit env ACTORTRACE_BUFFER_MB=1 ACTORTRACE_BLOCK_KB=4 ACTORTRACE_TEST_WRITER_DELAY_MS=300 \
        ACTORTRACE_OUT="$TMP/$run/%p.trace" LD_PRELOAD="$LIB_NOP_HOOKS" "$P" fork $N \
        >"$TMP/$run.out" 2>/dev/null
    parent=$(ls "$TMP/$run" | sort -n | head -n 1)
    child=$(ls "$TMP/$run" | sort -n | tail -n 1)
    "$DECODE" -o "$TMP/p$run.jsonl" "$TMP/$run/$parent" 2>/dev/null
    "$DECODE" -o "$TMP/c$run.jsonl" "$TMP/$run/$child" 2>/dev/null
    parent_drops=$((parent_drops + $(summary "$TMP/p$run.jsonl" dropped)))
    total=$(($(sends_of "$TMP/c$run.jsonl" 2) + $(summary "$TMP/c$run.jsonl" dropped)))
    [ "$total" -eq $N ] || { bad=$((bad + 1)); echo "# run $run: child kept + lost = $total, made $N"; }
done
check "the parents dropped events ($parent_drops), so the test means something" [ "$parent_drops" -gt 0 ]
equal "runs where the child's kept + lost differ from what it made" $bad 0

mkdir -p "$TMP/first" "$TMP/rings"
limit env ACTORTRACE_RING_DIR="$TMP/rings" ACTORTRACE_OUT="$TMP/first/%p.trace" LD_PRELOAD="$LIB_NOP" \
    "$P" fork_first 1000 >"$TMP/first.out" 2>&1
check "fork before the first event: program succeeds" [ $? -eq 0 ]
child=$(ls "$TMP/first" | sort -n | tail -n 1)
"$DECODE" -o "$TMP/first.jsonl" "$TMP/first/$child" 2>/dev/null
check "fork before the first event: the child's trace ends cleanly" [ $? -eq 0 ]
equal "fork before the first event: the child's sends" "$(sends_of "$TMP/first.jsonl" 2)" 1000
check "fork before the first event: no ring file left" [ -z "$(ls -A "$TMP/rings")" ]
