#!/bin/sh
# The ring file takes what the program uses: a few blocks at start, grown by the writer ahead
# of use up to ACTORTRACE_BUFFER_MB, and never more; a tmpfs too small for it stops the growth
# (counted losses, no SIGBUS) instead of the program.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/crash"
RINGS="$TMP/rings"
mkdir -p "$RINGS"


ring_bytes() { # the size of the one ring file in $RINGS, and the bytes it takes
    stat -c '%s %b %B' "$RINGS"/*.ring | awk '{print $1, $2 * $3}'
}

# idle_run NAME SENDS VAR=VALUE...: starts `$IDLE SENDS` (`crash idle SENDS` unless IDLE says
# otherwise), waits for its sends, measures its ring file into $TMP/NAME.ring, ends it with
# SIGTERM and decodes its trace
IDLE="$P idle"
idle_run() {
    local name=$1 sends=$2
    shift 2
    env ACTORTRACE_RING_DIR="$RINGS" ACTORTRACE_OUT="$TMP/$name.trace" LD_PRELOAD="$LIB_NOP" "$@" \
        $IDLE "$sends" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    local pid=$!
    wait_for grep -q ground_truth "$TMP/$name.out"
    sleep 0.3 # the writer's next round, which would grow the ring if it had to
    ring_bytes >"$TMP/$name.ring"
    kill -TERM $pid
    wait $pid 2>/dev/null
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace" 2>"$TMP/$name.decode.err"
    check "$name: the trace ends cleanly" [ $? -eq 0 ]
    equal "$name: sends kept + counted as lost = sends made" \
        $(($(sends_of "$TMP/$name.jsonl" 1) + $(summary "$TMP/$name.jsonl" dropped))) "$sends"
    check "$name: the ring file is removed at the end" [ -z "$(ls -A "$RINGS")" ]
}

# one event, default 32 MiB buffer: 4 blocks of 64 KiB and the header, not 32 MiB
idle_run small 10
read size taken <"$TMP/small.ring"
check "one event: the ring file is 4 blocks ($size bytes, $taken taken; 32 MiB allowed)" \
    [ "$size" -le $((4096 + 4 * 65536)) ] && [ "$taken" -le $((4096 + 4 * 65536)) ]

# a program the writer keeps up with (1,024 sends, then 1 ms of sleep; 300,000 fill 184 blocks):
# woken when half the ring is in use, the writer grows it then only up to 2 MiB (32 blocks), and
# past that only when it came late, not at every wake-up, when it doubled the ring each time
IDLE="$B/tests/progs/paced 1024"
idle_run paced 300000
IDLE="$P idle"
read size taken <"$TMP/paced.ring"
check "paced: the ring stays small ($taken bytes taken; at most 64 blocks)" \
    [ "$taken" -le $((4096 + 64 * 65536)) ]

# overwrite mode keeps every block: the ring grows to the buffer size and stops there
idle_run full 300000 ACTORTRACE_MODE=overwrite ACTORTRACE_BUFFER_MB=2 ACTORTRACE_BLOCK_KB=16
read size taken <"$TMP/full.ring"
equal "overwrite: the ring grew to ACTORTRACE_BUFFER_MB and no further" "$size" $((4096 + 2 * 1048576))

# the same in a 1 MiB tmpfs (where the machine lets us mount one): the ring stops growing at
# 1 MiB, the program runs on, and every event is kept or counted as replaced
if mkdir -p "$TMP/small_tmpfs" && mount -t tmpfs -o size=1m tmpfs "$TMP/small_tmpfs" 2>/dev/null; then
    limit env ACTORTRACE_RING_DIR="$TMP/small_tmpfs" ACTORTRACE_MODE=overwrite ACTORTRACE_BLOCK_KB=16 \
        ACTORTRACE_OUT="$TMP/tmpfs.trace" LD_PRELOAD="$LIB_NOP" \
        "$P" abort 300000 >"$TMP/tmpfs.out" 2>"$TMP/tmpfs.err"
    check "full tmpfs: the program ends as it would (SIGABRT), not by SIGBUS" [ $? -eq 134 ]
    check "full tmpfs: one line says the ring cannot grow" grep -q "ring file cannot grow" "$TMP/tmpfs.err"
    "$DECODE" -o "$TMP/tmpfs.jsonl" "$TMP/tmpfs.trace" 2>/dev/null
    check "full tmpfs: the trace ends cleanly" [ $? -le 1 ]
    kept=$(sends_of "$TMP/tmpfs.jsonl" 1)
    lost=$(jq '[.lost[] | select(.reason == "overwritten") | .count] | add // 0' "$(tail -n 1 "$TMP/tmpfs.jsonl" >"$TMP/tmpfs.summary"; echo "$TMP/tmpfs.summary")")
    check "full tmpfs: sends were replaced ($lost)" [ "$lost" -gt 0 ]
    umount "$TMP/small_tmpfs"
else
    echo "ok - full tmpfs: skipped, cannot mount a tmpfs here # SKIP"
fi
