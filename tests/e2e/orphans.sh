#!/bin/sh
# Ring files whose process was killed: `tracedecode --recover` moves their events into the
# trace and removes them; `tracedecode --rings` lists them and `--rings --remove` clears those
# whose process is gone; a process is recognised by its pid and start time, so a container's
# pid 1 is recovered on the host, and --force-recover reads a ring even while its process runs.
# After a kill, the losses (dropped, overwritten) are counted right from the ring's counters,
# and timestamps have two clock samples however early the kill.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/killme"
RINGS="$TMP/rings"
FAST=""
mkdir -p "$RINGS"
export ACTORTRACE_RING_DIR="$RINGS"

progress() { # progress FILE INDEX: the last send of actor INDEX+1 that had returned
    od -A n -t u8 -j $(($2 * 8)) -N 8 "$1" | tr -d ' '
}

first_send() { # first_send FILE PID: waits (up to 20 s) until a send has returned, or PID ended
    local n=0
    while [ $n -lt 2000 ] && kill -0 "$2" 2>/dev/null; do
        [ -s "$1" ] && [ "$(progress "$1" 0)" != 0 ] && return 0
        sleep 0.01
        n=$((n + 1))
    done
    return 1
}

KILLED_LIB=$LIB_NOP
killed_run() { # killed_run NAME SECONDS [VAR=VALUE...]: killme, SIGKILLed SECONDS after its first send
    local name=$1 secs=$2
    shift 2
    rm -f "$TMP/$name.progress"
    env "$@" ACTORTRACE_OUT="$TMP/$name.trace" LD_PRELOAD="$KILLED_LIB" "$P" "$TMP/$name.progress" $FAST 2>/dev/null &
    local pid=$!
    # a loaded machine may take longer than SECONDS to start the program at all: the clock
    # starts at its first send, so that every run has events to check
    first_send "$TMP/$name.progress" $pid
    sleep "$secs"
    kill -KILL $pid
    wait $pid 2>/dev/null
}

# --recover: the events go into the trace, the ring goes
killed_run r 0.3
"$DECODE" -o "$TMP/r1.jsonl" "$TMP/r.trace" 2>/dev/null
"$DECODE" --recover "$TMP/r.trace" 2>"$TMP/r.err"
check "--recover: status 0" [ $? -eq 0 ]
check "--recover: it says what it wrote" grep -q "wrote [0-9]* recovered events into the trace; removed" "$TMP/r.err"
check "--recover: the ring file is removed" [ -z "$(ls -A "$RINGS")" ]
"$DECODE" -o "$TMP/r2.jsonl" "$TMP/r.trace" 2>"$TMP/r2.err"
equal "--recover: the trace alone decodes to the same events" \
    "$(grep -c '"event"' "$TMP/r2.jsonl")" "$(grep -c '"event"' "$TMP/r1.jsonl")"
check "--recover: no complaint about a missing ring afterwards" lacks "$TMP/r2.err" "ring file"
"$DECODE" --recover "$TMP/r.trace" 2>"$TMP/r3.err"
check "--recover: a second run has nothing to do" lacks "$TMP/r3.err" "wrote"

# --rings: a running process's ring, then the same gone; --remove recovers it into its trace
env ACTORTRACE_OUT="$TMP/l.trace" LD_PRELOAD="$LIB_NOP" "$P" "$TMP/l.progress" 2>/dev/null &
pid=$!
sleep 0.3
"$DECODE" --rings >"$TMP/l1.out"
check "--rings: the ring of a running process, listed as running" grep -q "pid $pid	running	.*trace $TMP/l.trace" "$TMP/l1.out"
"$DECODE" -o "$TMP/f0.jsonl" "$TMP/l.trace" 2>/dev/null
equal "a running process's ring is not read" "$(summary "$TMP/f0.jsonl" recovered)" 0
"$DECODE" --force-recover -o "$TMP/f1.jsonl" "$TMP/l.trace" 2>/dev/null
check "--force-recover: read all the same" [ "$(summary "$TMP/f1.jsonl" recovered)" -gt 0 ]
kill -KILL $pid
wait $pid 2>/dev/null
"$DECODE" --rings "$RINGS" >"$TMP/l2.out"
check "--rings: listed as gone once killed" grep -q "pid $pid	gone" "$TMP/l2.out"
"$DECODE" --rings --remove >"$TMP/l3.out" 2>"$TMP/l3.err"
check "--rings --remove: removed" grep -q "^removed $RINGS/" "$TMP/l3.out"
check "--rings --remove: the ring file is gone" [ -z "$(ls -A "$RINGS")" ]
check "--rings --remove: its events went into the trace first" grep -q "wrote [0-9]* recovered events" "$TMP/l3.err"

# losses_counted NAME LABEL: the killed run NAME lost events, and every send that returned is
# in its trace or counted as lost, and no more than the sends begun
losses_counted() {
    local name=$1 label=$2
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace" 2>/dev/null
    local kept lost returned
    kept=$(grep -c '"event":"send"' "$TMP/$name.jsonl")
    lost=$(summary "$TMP/$name.jsonl" dropped)
    returned=$(($(progress "$TMP/$name.progress" 0) + $(progress "$TMP/$name.progress" 1)))
    check "$label: events were lost ($lost)" [ "$lost" -gt 0 ]
    check "$label: sends kept ($kept) + lost ($lost) >= sends returned ($returned)" \
        [ $((kept + lost)) -ge "$returned" ]
    check "$label: and no more than the sends begun ($((returned + 2)))" \
        [ $((kept + lost)) -le $((returned + 2)) ]
    rm -f "$RINGS"/*
}

# the losses after a kill (no pause in the senders: the 1 MiB buffer overflows, and in drop
# mode the writer is slowed down by the test copy's hook, so that threads stop waiting for it
# and drop)
FAST=fast
KILLED_LIB=$LIB_NOP_HOOKS
for mode in drop overwrite; do
    killed_run "$mode" 0.5 ACTORTRACE_MODE=$mode ACTORTRACE_BUFFER_MB=1 ACTORTRACE_BLOCK_KB=16 \
        ACTORTRACE_TEST_WRITER_DELAY_MS=300
    losses_counted "$mode" "$mode, killed"
done
# the same in overwrite mode with the writer held, after it saw a block FULL, until a thread
# takes that block over (ACTORTRACE_TEST_PARTIAL_WAIT_MS): when the writer did not claim a
# partly filled block before writing it, it wrote and freed blocks their new owners were
# filling, and 5 runs of 5 lost 60,619 to 169,831 sends uncounted
killed_run taken 0.5 ACTORTRACE_MODE=overwrite ACTORTRACE_BUFFER_MB=1 ACTORTRACE_BLOCK_KB=16 \
    ACTORTRACE_TEST_PARTIAL_WAIT_MS=2
losses_counted taken "overwrite, killed, blocks taken over while the writer looks at them"
FAST=""
KILLED_LIB=$LIB_NOP

# killed in overwrite mode right after a thread cleared the events of a block it took over
# (the test copy's hook, at the 200th such steal, for certain): they were counted as lost
# before they went
rm -f "$TMP/steal.progress" "$TMP/steal.trace"
ACTORTRACE_MODE=overwrite ACTORTRACE_BUFFER_MB=1 ACTORTRACE_BLOCK_KB=16 \
    ACTORTRACE_TEST_KILL_AT_STEAL=200 ACTORTRACE_OUT="$TMP/steal.trace" LD_PRELOAD="$LIB_NOP_HOOKS" \
    timeout -s KILL 30 "$P" "$TMP/steal.progress" fast 2>/dev/null
losses_counted steal "killed at an overwrite"

# killed 30 ms after its first send, before the writer's second sample used to reach anything:
# the events' time span is the run's, not the tick count taken for nanoseconds
start=$(date +%s%N)
killed_run early 0.03
wall=$(($(date +%s%N) - start))
"$DECODE" -o "$TMP/early.jsonl" "$TMP/early.trace" 2>"$TMP/early.err"
span=$(jq -s '[.[] | select(.event) | .ts_ns] | max - min' "$TMP/early.jsonl")
check "early kill: the events span $span ns, within the $wall ns the run took" [ "$span" -le "$wall" ]
check "early kill: two clock samples at least, in the trace or the ring" lacks "$TMP/early.err" "only one CLOCK"
rm -f "$RINGS"/*

# a container's pid 1, killed, decoded where pid 1 is another process (init)
if unshare -p -f true 2>/dev/null; then
    unshare -p -f env ACTORTRACE_OUT="$TMP/ns.trace" LD_PRELOAD="$LIB_NOP" "$P" "$TMP/ns.progress" 2>/dev/null &
    outer=$!
    sleep 0.3
    kill -KILL "$(pgrep -P $outer)"
    wait $outer 2>/dev/null
    "$DECODE" -o "$TMP/ns.jsonl" "$TMP/ns.trace" 2>"$TMP/ns.err"
    equal "pid namespace: its ring is pid 1's, listed as gone" "$("$DECODE" --rings | grep -c 'pid 1	gone')" 1
    check "pid namespace: recovered although a pid 1 runs here" [ "$(summary "$TMP/ns.jsonl" recovered)" -gt 0 ]
else
    echo "ok - pid namespace: skipped, unshare -p is not allowed here # SKIP"
fi
