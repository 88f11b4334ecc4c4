#!/bin/sh
# Watching running programs: actortrace top and tracedecode --follow, on slowsink (refrt), whose
# sink's mailbox grows by about 400 messages a second while its producer sends.
#  - top, run in tmux on the running program's pid and read with capture-pane: the sink is the
#    first actor of every second shown, its depth rises from second to second, and each depth
#    shown equals the stats view's max_depth of the run cut at the end of that second (while it
#    grows, the largest depth in that second); after the end the view says the run ended.
#  - actortrace record --top: the view of the program it starts, whose output goes to a file.
#  - --follow's JSONL of a running program, with and without --ring, once the program ended,
#    is the offline decode, line for line (in another order: each read's batch is in time
#    order); --ring's events from the ring file are marked.
#  - the same on CZMQ, Aether and CAF programs.
#  - --follow --format stats: each second's sink depth is the stats view's, as for top.
#  - a follower started before the program, interrupted in the middle (what it wrote is part of
#    the decode: it leaves out the events whose ts_ns a later clock sample may still change, and
#    says so; its summary says the trace was cut), and started again: the whole decode.
#  - a trace cut in the middle of a frame while its process runs: the follower waits, reports
#    no damage, and reads the rest when it comes; a dead process's cut trace: the decode of it.
#  - a frame caught half-written (its last bytes still zeros): read again, not reported.
#  - a program that forks: top on the parent's pid shows both processes' sinks; a follower of
#    both traces gives their merged decode.
#  - a --ring follower that pauses between seeing the ring's blocks and reading them, while
#    the writer writes and gives back the full ones: it ends cleanly with the offline decode.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/slowsink"
CLI="$B/actortrace"
export ACTORTRACE_RING_DIR="$TMP/rings"
mkdir -p "$ACTORTRACE_RING_DIR"

# a program traced in the background, under timeout: runner is timeout's pid (wait for it),
# prog the program's
start_traced() { # start_traced LIBRARY TRACE PROGRAM ARGS...
    local lib="$1" trace="$2"
    shift 2
    timeout -s KILL 60 env ACTORTRACE_OUT="$trace" LD_PRELOAD="$lib" "$@" &
    runner=$!
    wait_for "the program starts" started
}
started() { prog=$(pgrep -P $runner); [ -n "$prog" ]; }

wait_for() { # wait_for WHAT COMMAND...: COMMAND every 0.1 s until it succeeds, for 60 s at most
    local what="$1" tries=0
    shift
    until "$@"; do
        tries=$((tries + 1))
        if [ $tries -ge 600 ]; then
            echo "not ok - gave up waiting: $what"
            tmux -L "$SOCK" kill-server 2>/dev/null
            exit 1
        fi
        sleep 0.1
    done
}

# a tmux server of this run's own, 100 x 30
SOCK="live-test-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
on_screen() { # on_screen COMMAND: runs the shell COMMAND on a new tmux screen
    tmux -L "$SOCK" kill-server 2>/dev/null
    wait_for "a tmux screen" tmux -L "$SOCK" new-session -d -x 100 -y 30 "$1"
}

captured() { # captured FILE PATTERN: the tmux pane into FILE; true when it holds PATTERN
    tmux -L "$SOCK" capture-pane -p >"$1"
    grep -q "$2" "$1"
}

same_events() { # same_events NAME FOLLOWED OFFLINE: the same lines, "ring" marks aside
    sed 's/,"ring":true//' "$2" | sort >"$2.sorted"
    sort "$3" >"$3.sorted"
    check "$1" cmp -s "$2.sorted" "$3.sorted"
}

# ---- top in tmux --------------------------------------------------------------------------
start_traced "$LIB" "$TMP/top.trace" "$P" 4 >"$TMP/top.out"
wait_for "the trace" [ -s "$TMP/top.trace" ]
on_screen "ACTORTRACE_RING_DIR='$ACTORTRACE_RING_DIR' '$CLI' top $prog; sleep 600"
n=0
while kill -0 $prog 2>/dev/null; do
    n=$((n + 1))
    tmux -L "$SOCK" capture-pane -p >"$TMP/screen.$n" 2>/dev/null
    sleep 0.4
done
wait $runner
check "top: the program ran" [ $? -eq 0 ]
wait_for "top says the run ended" captured "$TMP/screen.last" "the run ended"
tmux -L "$SOCK" send-keys q
# what a user sees (docs/LIVE.md shows these): a second while it runs, and the end
cp "$TMP/screen.last" "$B/top-ended.txt"
cp "$(grep -l running "$TMP"/screen.[0-9]* | sort -t. -k2 -n | tail -n 1)" "$B/top-running.txt"
check "top: says the run ended, and shows its last second" \
    grep -q "the run ended: its last second" "$TMP/screen.last"
# each running second seen: its number, and the first actor row's name and depth
for f in "$TMP"/screen.[0-9]*; do
    awk '/^second [0-9]+ .*running/ {s = $2} /^ACTOR/ {getline; if (s) print s, $1, $4; exit}' "$f"
done | sort -n -u >"$TMP/seconds"
check "top: showed at least two running seconds ($(wc -l <"$TMP/seconds"))" \
    [ "$(wc -l <"$TMP/seconds")" -ge 2 ]
equal "top: the sink is first in every second shown" \
    "$(awk '$2 != "sink"' "$TMP/seconds")" ""
check "top: the sink's depth rises from second to second" \
    awk 'NR > 1 && $3 <= d {exit 1} {d = $3}' "$TMP/seconds"
while read -r second name depth; do
    want=$("$DECODE" -f stats --json --to "+${second}s" "$TMP/top.trace" 2>/dev/null |
        jq '.actors[] | select(.name == "sink") | .max_depth')
    equal "top: second $second: the sink's depth is the stats view's" "$depth" "$want"
done <"$TMP/seconds"
tmux -L "$SOCK" kill-server 2>/dev/null

# ---- actortrace record --top: the program and the view together, the program's output apart
mkdir -p "$TMP/rec"
on_screen "cd '$TMP/rec' && \
    ACTORTRACE_RING_DIR='$ACTORTRACE_RING_DIR' timeout --foreground 60 '$CLI' record --preload '$LIB' \
    -o '$TMP/rec/r-%p.trace' --top -- '$P' 2 2>'$TMP/rec.err'; echo \$? >'$TMP/rec.status'; \
    sleep 600"
wait_for "record --top's view says the run ended" captured "$TMP/rec.screen" "the run ended"
check "record --top: the view shows the program's sink" grep -q "^sink " "$TMP/rec.screen"
check "record --top: no line of the program's output on the screen" \
    [ -z "$(grep ground_truth "$TMP/rec.screen")" ]
tmux -L "$SOCK" send-keys q
wait_for "record --top ends" [ -s "$TMP/rec.status" ]
equal "record --top: exits with the program's status once q ended the view" \
    "$(cat "$TMP/rec.status")" 0
out=$(ls "$TMP"/rec/r-*.trace.out)
check "record --top: the program's output is in TRACE.out" grep -q '^{"ground_truth"' "$out"
check "record --top: and says so" grep -q "the output of .* is in $out" "$TMP/rec.err"
tmux -L "$SOCK" kill-server 2>/dev/null

# ---- --follow of a running program ----------------------------------------------------------
for ring in "" --ring; do
    name=follow${ring:+-ring}
    timeout 60 "$DECODE" --follow $ring -o "$TMP/$name.jsonl" "$TMP/$name.trace" \
        2>"$TMP/$name.err" &
    follower=$!
    timeout 60 env ACTORTRACE_OUT="$TMP/$name.trace" LD_PRELOAD="$LIB" "$P" 2 >/dev/null
    wait $follower
    equal "$name: the follower ends with the program, status 0" $? 0
    "$DECODE" -o "$TMP/$name.offline" "$TMP/$name.trace"
    same_events "$name: the followed JSONL is the offline decode" "$TMP/$name.jsonl" \
        "$TMP/$name.offline"
    check "$name: reported nothing" [ ! -s "$TMP/$name.err" ]
done
check "follow-ring: events read from the ring file are marked" grep -q '"ring":true' \
    "$TMP/follow-ring.jsonl"

# every runtime the library traces: the followed JSONL of a CZMQ, an Aether and a CAF program
for spec in "czmq/pingpong zstr 3000" "aether/pingpong 20000" "caf/pingpong reply 20000"; do
    set -- $spec
    name=$(echo "$1" | tr / -)
    timeout 60 "$DECODE" --follow --ring -o "$TMP/$name.jsonl" "$TMP/$name.trace" 2>/dev/null &
    follower=$!
    prog="$B/tests/$1"
    shift
    timeout 60 env ACTORTRACE_OUT="$TMP/$name.trace" LD_PRELOAD="$LIB" "$prog" "$@" >/dev/null
    wait $follower
    equal "$name: the follower ends with the program, status 0" $? 0
    "$DECODE" -o "$TMP/$name.offline" "$TMP/$name.trace"
    same_events "$name: the followed JSONL is the offline decode" "$TMP/$name.jsonl" \
        "$TMP/$name.offline"
done

# --format stats: the last whole second once a second; the sink's depth is the stats view's
timeout 60 "$DECODE" --follow -f stats -o "$TMP/seconds.txt" "$TMP/seconds.trace" 2>/dev/null &
follower=$!
timeout 60 env ACTORTRACE_OUT="$TMP/seconds.trace" LD_PRELOAD="$LIB" "$P" 3 >/dev/null
wait $follower
equal "follow, stats: ends with the program, status 0" $? 0
awk '/^second [0-9]+/ {s = $2 + 0; last = /the run ended/} $1 == "sink" && !last {print s, $4}' \
    "$TMP/seconds.txt" >"$TMP/seconds.sink"
check "follow, stats: wrote the sink's line for at least two seconds" \
    [ "$(wc -l <"$TMP/seconds.sink")" -ge 2 ]
while read -r second depth; do
    want=$("$DECODE" -f stats --json --to "+${second}s" "$TMP/seconds.trace" 2>/dev/null |
        jq '.actors[] | select(.name == "sink") | .max_depth')
    equal "follow, stats: second $second: the sink's depth is the stats view's" "$depth" "$want"
done <"$TMP/seconds.sink"
check "follow, stats: the last lines are of the run's last second" \
    grep -q "the last, the run ended" "$TMP/seconds.txt"

# ---- a follower interrupted and started again ---------------------------------------------------
# with --ring, so that there are events after the last clock sample when it is interrupted
timeout 60 "$DECODE" --follow --ring -o "$TMP/first.jsonl" "$TMP/again.trace" 2>"$TMP/first.err" &
first=$!
start_traced "$LIB" "$TMP/again.trace" "$P" 3 >/dev/null
wrote_some() { [ "$(cat "$TMP/first.jsonl" 2>/dev/null | wc -l)" -gt 100 ]; }
wait_for "the first follower writes" wrote_some
kill -INT $first
wait $first
equal "interrupted: status 1 (the trace it read was not whole)" $? 1
check "interrupted: its summary says truncated" \
    [ "$(summary "$TMP/first.jsonl" truncated)" = true ]
check "interrupted: says it left out the events whose ts_ns is not known yet" \
    grep -q "after the last clock sample are not written" "$TMP/first.err"
timeout 60 "$DECODE" --follow -o "$TMP/second.jsonl" "$TMP/again.trace" 2>/dev/null &
second=$!
wait $runner
wait $second
"$DECODE" -o "$TMP/again.offline" "$TMP/again.trace"
head -n -1 "$TMP/first.jsonl" | sed 's/,"ring":true//' | sort >"$TMP/first.sorted"
sort "$TMP/again.offline" >"$TMP/again.sorted"
equal "interrupted: each line it wrote is in the decode" \
    "$(comm -23 "$TMP/first.sorted" "$TMP/again.sorted" | wc -l)" 0
same_events "started again: the whole decode" "$TMP/second.jsonl" "$TMP/again.offline"

# ---- a trace cut in the middle of a frame ---------------------------------------------------------
# paced waits for a signal after its sends: its frames so far are in its trace while it lives
start_traced "$LIB_NOP" "$TMP/paced.trace" "$B/tests/progs/paced" 100 200000 >"$TMP/paced.out"
wait_for "paced sends" grep -q ground_truth "$TMP/paced.out"
kill -TERM $prog
{ wait $runner; } 2>/dev/null
# the offset of a frame's header plus 100 bytes: inside its payload
size=$(stat -c %s "$TMP/paced.trace")
cut=$(($(grep -obUaP 'ATRF' "$TMP/paced.trace" | awk -F: -v h=$((size / 2)) '$1 > h {print $1; exit}') + 100))
head -c $cut "$TMP/paced.trace" >"$TMP/cut.trace"
"$DECODE" -o "$TMP/cut.offline" "$TMP/cut.trace" 2>"$TMP/cut.offline.err"
check "cut: the offline decode says the frame is cut" grep -q "is cut" "$TMP/cut.offline.err"
"$DECODE" --follow -o "$TMP/cut.jsonl" "$TMP/cut.trace" 2>"$TMP/cut.err"
equal "cut, its process gone: status 1" $? 1
check "cut, its process gone: the follower says the frame is cut" grep -q "is cut" "$TMP/cut.err"
check "cut, its process gone: no damage reported" [ -z "$(grep damaged "$TMP/cut.err")" ]
same_events "cut, its process gone: the decode of the cut trace" "$TMP/cut.jsonl" \
    "$TMP/cut.offline"

# the same cut while its process lives: a program of our own takes the trace's place
start_traced "$LIB_NOP" "$TMP/alive.trace" "$B/tests/progs/paced" 100 200000 >"$TMP/alive.out"
wait_for "paced sends" grep -q ground_truth "$TMP/alive.out"
size=$(stat -c %s "$TMP/alive.trace")
cut=$(($(grep -obUaP 'ATRF' "$TMP/alive.trace" | awk -F: -v h=$((size / 2)) '$1 > h {print $1; exit}') + 100))
head -c $cut "$TMP/alive.trace" >"$TMP/grow.trace"
timeout 60 "$DECODE" --follow --poll 20 -o "$TMP/grow.jsonl" "$TMP/grow.trace" 2>"$TMP/grow.err" &
follower=$!
sleep 0.5 # polls that find the frame cut: a test of what they do, not of a time
# the follower is stopped while the program ends and the rest is appended: a process gone with
# its trace still cut is another case (above), and a running one must not turn into it here
decoder=$(pgrep -P $follower)
kill -STOP $decoder
kill -TERM $prog
{ wait $runner; } 2>/dev/null
tail -c +$((cut + 1)) "$TMP/alive.trace" >>"$TMP/grow.trace"
kill -CONT $decoder
wait $follower
equal "cut while running: the follower ends at the END record, status 0" $? 0
check "cut while running: no damage, no cut reported" [ ! -s "$TMP/grow.err" ]
"$DECODE" -o "$TMP/alive.offline" "$TMP/alive.trace"
same_events "cut while running: the whole decode once the rest came" "$TMP/grow.jsonl" \
    "$TMP/alive.offline"

# a frame caught half-written: all its bytes counted in the file's size, its last ones not yet
# written (zeros), so that it fails its checksum. A follower that reads every 60 s reads it once
# that way, the bytes come, and its next read (the last, at SIGINT) finds the frame whole.
start_traced "$LIB_NOP" "$TMP/half-src.trace" "$B/tests/progs/paced" 100 200000 >"$TMP/half.out"
wait_for "paced sends" grep -q ground_truth "$TMP/half.out"
size=$(stat -c %s "$TMP/half-src.trace")
at=$(grep -obUaP 'ATRF' "$TMP/half-src.trace" | awk -F: -v h=$((size / 2)) '$1 > h {print $1; exit}')
end=$((at + $(od -A n -t u2 -j $((at + 6)) -N 2 "$TMP/half-src.trace") + \
    $(od -A n -t u4 -j $((at + 20)) -N 4 "$TMP/half-src.trace")))
head -c $((end - 16)) "$TMP/half-src.trace" >"$TMP/half.trace"
head -c 16 /dev/zero >>"$TMP/half.trace"
timeout 60 "$DECODE" --follow --poll 60000 -o "$TMP/half.jsonl" "$TMP/half.trace" \
    2>"$TMP/half.err" &
follower=$!
wait_for "the follower's first read" [ -s "$TMP/half.jsonl" ]
dd if="$TMP/half-src.trace" of="$TMP/half.trace" bs=1 skip=$((end - 16)) seek=$((end - 16)) \
    count=16 conv=notrunc status=none
kill -TERM $prog
{ wait $runner; } 2>/dev/null
tail -c +$((end + 1)) "$TMP/half-src.trace" >>"$TMP/half.trace"
kill -INT $follower
wait $follower
equal "half-written: the follower read to the END record, status 0" $? 0
check "half-written: no damage reported" [ -z "$(grep damaged "$TMP/half.err")" ]
"$DECODE" -o "$TMP/half.offline" "$TMP/half-src.trace"
same_events "half-written: the whole decode" "$TMP/half.jsonl" "$TMP/half.offline"

# ---- a program that forks ------------------------------------------------------------------------
mkdir -p "$TMP/fork"
export FORK=1
start_traced "$LIB" "$TMP/fork/%p.trace" "$P" 3 >/dev/null
unset FORK
two_traces() { [ "$(ls "$TMP/fork" | wc -l)" -ge 2 ]; }
wait_for "both processes' traces" two_traces
parent="$TMP/fork/$prog.trace"
child="$TMP/fork/$(ls "$TMP/fork" | grep -v "^$prog.trace$" | head -n 1)"
timeout 60 "$DECODE" --follow --ring -o "$TMP/fork.jsonl" "$parent" "$child" 2>"$TMP/fork.err" &
follower=$!
on_screen "ACTORTRACE_RING_DIR='$ACTORTRACE_RING_DIR' '$CLI' top $prog; sleep 600"
wait_for "top shows a second of both" captured "$TMP/fork.screen" "^second"
tmux -L "$SOCK" send-keys q
check "fork: top watches both processes" grep -q "top: 2 processes" "$TMP/fork.screen"
equal "fork: top shows the sink of each" "$(grep -c '^[0-9]*:sink ' "$TMP/fork.screen")" 2
tmux -L "$SOCK" kill-server 2>/dev/null
wait $runner
check "fork: the program ran" [ $? -eq 0 ]
wait $follower
equal "fork: the follower ends with both processes, status 0" $? 0
"$DECODE" -o "$TMP/fork.offline" "$parent" "$child"
same_events "fork: the followed JSONL of both is their merged decode" "$TMP/fork.jsonl" \
    "$TMP/fork.offline"

# ---- blocks given back while the follower reads them ----------------------------------------
# The sanitized decoder's test hook pauses 30 ms between seeing the ring's blocks and reading
# them, 4 KiB blocks: the writer writes and gives back (used 0) full blocks the follower had
# read in part while they filled. Each such block is left to its frame in the file.
export ACTORTRACE_BLOCK_KB=4
start_traced "$LIB" "$TMP/pause.trace" "$P" 3 2 >/dev/null
unset ACTORTRACE_BLOCK_KB
wait_for "the trace" [ -s "$TMP/pause.trace" ]
ACTORTRACE_TEST_FOLLOW_PAUSE_MS=30 timeout 60 "$ASAN_DECODE" --follow --ring -o "$TMP/pause.jsonl" \
    "$TMP/pause.trace" 2>"$TMP/pause.err"
equal "paused follower: ends with the program, status 0" $? 0
wait $runner
check "paused follower: the program ran" [ $? -eq 0 ]
"$DECODE" -o "$TMP/pause.offline" "$TMP/pause.trace"
same_events "paused follower: its JSONL is the decode" "$TMP/pause.jsonl" "$TMP/pause.offline"
