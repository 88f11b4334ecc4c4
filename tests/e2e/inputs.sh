#!/bin/sh
# tracedecode on odd inputs and outputs: a trace given twice, a copy of one, standard input as
# '-', a pipe, a device that never ends (/dev/zero), a ring file that is a FIFO, an output that
# fails to write (/dev/full). Each must end quickly with the right status and say what it is.
. "$(dirname "$0")/../lib.sh"

traced "$TMP/pp.trace" "$B/examples/pingpong" 200 >/dev/null
"$DECODE" -o "$TMP/pp.jsonl" "$TMP/pp.trace"
events=$(summary "$TMP/pp.jsonl" events)
check "the trace decodes ($events events)" [ "$events" -gt 1000 ]

# ---- The same trace twice ----

"$DECODE" -o "$TMP/twice.jsonl" "$TMP/pp.trace" "$TMP/pp.trace" 2>"$TMP/twice.err"
equal "the same file twice: status 2" $? 2
check "the same file twice: says so" grep -q "pp.trace is the same file as .*pp.trace" "$TMP/twice.err"
cp "$TMP/pp.trace" "$TMP/copy.trace"
"$DECODE" -o "$TMP/copy.jsonl" "$TMP/pp.trace" "$TMP/copy.trace" 2>"$TMP/copy.err"
equal "a copy with its original: status 2" $? 2
check "a copy with its original: says so" grep -q "copy.trace is a copy of" "$TMP/copy.err"
ln "$TMP/pp.trace" "$TMP/link.trace"
"$DECODE" -o /dev/null "$TMP/link.trace" "$TMP/pp.trace" 2>/dev/null
equal "a hard link with its original: status 2" $? 2

# ---- Standard input and pipes ----

"$DECODE" - <"$TMP/pp.trace" >"$TMP/stdin.jsonl" 2>"$TMP/stdin.err"
equal "'-' reads standard input: status 0" $? 0
check "'-' reads standard input: the same events as the file" cmp -s "$TMP/pp.jsonl" "$TMP/stdin.jsonl"
cat "$TMP/pp.trace" | "$DECODE" -o "$TMP/pipe.jsonl" -
equal "a pipe: status 0" $? 0
check "a pipe: the same events as the file" cmp -s "$TMP/pp.jsonl" "$TMP/pipe.jsonl"
cat "$TMP/pp.trace" | "$DECODE" -o /dev/null - - 2>"$TMP/stdin2.err"
equal "'-' twice: status 2" $? 2
size=$(stat -c %s "$TMP/pp.trace")
head -c $((size / 2)) "$TMP/pp.trace" | "$DECODE" -o "$TMP/half.jsonl" - 2>/dev/null
equal "a pipe cut in the middle: status 1" $? 1
check "a pipe cut in the middle: truncated" [ "$(summary "$TMP/half.jsonl" truncated)" = true ]

# A stream that is not a trace is refused after its first bytes, however long it is: under a
# 256 MiB address-space limit, reading /dev/zero whole would fail with "out of memory".
(ulimit -v 262144; exec timeout 20 "$DECODE" -o /dev/null /dev/zero) 2>"$TMP/zero.err"
equal "/dev/zero: status 2" $? 2
check "/dev/zero: not an actortrace file" grep -q "/dev/zero: not an actortrace file" "$TMP/zero.err"
(ulimit -v 262144; head -c 300000000 /dev/zero | timeout 20 "$DECODE" -o /dev/null -) 2>"$TMP/zpipe.err"
equal "300 MB of zeros through a pipe: status 2" $? 2
check "300 MB of zeros through a pipe: not an actortrace file" grep -q "not an actortrace file" "$TMP/zpipe.err"

# ---- A ring file that is a FIFO ----

# A killed process's trace names its ring file; replaced by a FIFO, opening it would wait for a
# writer forever.
export ACTORTRACE_RING_DIR="$TMP/rings"
mkdir -p "$ACTORTRACE_RING_DIR"
env ACTORTRACE_OUT="$TMP/k.trace" LD_PRELOAD="$LIB_NOP" "$B/tests/progs/killme" "$TMP/k.progress" 2>/dev/null &
pid=$!
sleep 0.3
kill -KILL $pid
wait $pid 2>/dev/null
ring=$(ls "$ACTORTRACE_RING_DIR" | head -n 1)
check "the killed process left its ring file" [ -n "$ring" ]
rm -f "$ACTORTRACE_RING_DIR/$ring"
mkfifo "$ACTORTRACE_RING_DIR/$ring"
timeout 20 "$DECODE" -o "$TMP/k.jsonl" "$TMP/k.trace" 2>"$TMP/k.err"
equal "ring file is a FIFO: the decoder does not wait (status 1: the trace is cut)" $? 1
check "ring file is a FIFO: says it is not a regular file" grep -q "cannot be read (not a regular file)" "$TMP/k.err"
rm -rf "$ACTORTRACE_RING_DIR"
unset ACTORTRACE_RING_DIR

# ---- An output that cannot be written ----

# large enough that the output fails while events are still being merged (1 MiB buffer)
traced "$TMP/big.trace" "$B/examples/pingpong" 5000 >/dev/null
"$DECODE" -o /dev/full "$TMP/big.trace" 2>"$TMP/full.err"
equal "-o /dev/full: status 2 (an I/O error)" $? 2
check "-o /dev/full: says the output could not be written" grep -q "/dev/full: No space left on device" "$TMP/full.err"
check "-o /dev/full: says nothing about the trace" [ "$(grep -c -v '/dev/full' "$TMP/full.err")" = 0 ]

# ---- Small traces that ask for a lot of memory ----

# Each runs under a 1 GiB address-space limit, which the memory they claim would pass: an
# allocation that fails makes tracedecode exit 2 ("out of memory"); within its limits it skips
# what is beyond them as damaged (status 1) and says why.
bomb() { # bomb NAME FRAMES COUNT [meta]: the trace's size, decoded under the limit
    local name=$1
    shift
    "$B/fuzz/bombtrace" "$TMP/$name.trace" "$@"
    (ulimit -v 1048576; exec "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace") 2>"$TMP/$name.err"
    echo $? >"$TMP/$name.status"
    stat -c %s "$TMP/$name.trace"
}
size=$(bomb big 20 2097152)
equal "$size-byte trace of 20 frames of 2 M events (80 MiB each): status 1" "$(cat "$TMP/big.status")" 1
check "frames of 2 M events: refused by the per-frame limit" \
    [ "$(grep -c 'more than 131072 events; skipping' "$TMP/big.err")" = 20 ]
size=$(bomb many 200 131072)
equal "$size-byte trace of 200 overlapping frames of 131072 events (1 GiB in all): status 1" \
    "$(cat "$TMP/many.status")" 1
check "overlapping frames: those past the memory budget are skipped, and said to be" \
    grep -q "would pass the decoder's memory budget" "$TMP/many.err"
decoded=$(summary "$TMP/many.jsonl" events)
check "overlapping frames: those within the budget are decoded ($decoded events)" \
    [ "$decoded" -ge $((20 * 131072)) ]
size=$(bomb meta 100 3355443 meta)
equal "$size-byte trace of 100 META frames of 16 MiB of clock records: status 1" \
    "$(cat "$TMP/meta.status")" 1
check "META frames past the budget: skipped, and said to be" \
    grep -q "records would pass the decoder's memory budget" "$TMP/meta.err"

# ---- Many threads that come and go ----

# 2000 threads one after the other, 3000 events each (two blocks): the merge decodes a thread's
# block when it reaches it and frees its blocks when the thread is done, so it holds the blocks
# of the threads active at one time, not one or two of each of the 2000 (130 MB, 250 MB with
# the helper thread).
ACTORTRACE_MODE=block traced "$TMP/churn.trace" "$B/tests/progs/thread_churn" 2000 3000 >/dev/null
"$DECODE" -j1 -o "$TMP/churn.jsonl" "$TMP/churn.trace"
equal "2000 threads come and go: decoded (status 0)" $? 0
# the senders, main and the runtime's 2 workers; main sends once more at the end
equal "2000 threads come and go: every thread" "$(summary "$TMP/churn.jsonl" threads)" 2003
equal "2000 threads come and go: every send" \
    "$(grep -c '"event":"send"' "$TMP/churn.jsonl")" $((2000 * 3000 + 1))
for jobs in 1 2; do
    kb=$( { /usr/bin/time -f %M "$DECODE" -j$jobs -o /dev/null "$TMP/churn.trace"; } 2>&1 | tail -n 1)
    check "2000 threads come and go, -j$jobs: peak RSS ${kb} KiB, under 64 MiB" [ "$kb" -lt 65536 ]
done
