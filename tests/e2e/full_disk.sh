#!/bin/sh
# The trace file cannot grow past a limit (RLIMIT_FSIZE, as a full disk would stop it): the
# program runs on unaffected, one line on stderr says so, and the trace still ends with a
# record of exactly how many events did not reach the file, and when.
. "$(dirname "$0")/../lib.sh"
P="$B/examples/pingpong"

all_events() {
    tail -n 1 "$1" | jq '.ground_truth | .spawn + .send + .recv + 2 * .step + .schedule + .park + .unpark + .exit'
}

# About 20 million events, a trace of 8 to 12 MB: several times the limit below, however well
# a run's blocks compress.
ROUNDS=2000000
limit "$P" $ROUNDS >"$TMP/plain.out"
# 2 MiB (ulimit -f counts 512-byte blocks), room for the 1 MiB ring file but not the trace.
# Block mode, so that every event the program made is either in the file or counted as not
# written.
(ulimit -f 4096 && limit env ACTORTRACE_BUFFER_MB=1 ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/f.trace" \
    LD_PRELOAD="$LIB" "$P" $ROUNDS >"$TMP/f.out" 2>"$TMP/f.err")
check "program succeeds" [ $? -eq 0 ]
head -n -1 "$TMP/plain.out" >"$TMP/a"
head -n -1 "$TMP/f.out" >"$TMP/b"
check "program output unchanged" cmp -s "$TMP/a" "$TMP/b"
equal "one line on stderr" "$(wc -l <"$TMP/f.err")" 1
check "it says the write failed" grep -q "^actortrace: writing .* failed" "$TMP/f.err"
check "the file stayed within the limit" [ "$(stat -c %s "$TMP/f.trace")" -le 2097152 ]
"$DECODE" -o "$TMP/f.jsonl" "$TMP/f.trace" 2>"$TMP/f.decode.err"
check "the trace has its end record (not truncated)" [ "$(summary "$TMP/f.jsonl" truncated)" = false ]
kept=$(summary "$TMP/f.jsonl" events)
lost=$(summary "$TMP/f.jsonl" dropped)
check "some events were written ($kept)" [ "$kept" -gt 0 ]
equal "written + not written = every event the program made" $((kept + lost)) "$(all_events "$TMP/f.out")"
tail -n 1 "$TMP/f.jsonl" >"$TMP/f.summary"
check "the loss is a write error with a time range" jq -e \
    'any(.lost[]; .reason == "write_error" and .from_ns <= .to_ns and .count > 0)' "$TMP/f.summary"
check "the decoder reports the loss on stderr" grep -q "lost" "$TMP/f.decode.err"

# a limit too small even for the ring file: still no harm to the program
(ulimit -f 16 && limit env ACTORTRACE_OUT="$TMP/tiny.trace" LD_PRELOAD="$LIB" "$P" 1000 >"$TMP/tiny.out" 2>"$TMP/tiny.err")
check "8 KiB limit: program succeeds" [ $? -eq 0 ]
"$DECODE" -o "$TMP/tiny.jsonl" "$TMP/tiny.trace" 2>/dev/null
check "8 KiB limit: what was written decodes" [ $? -le 1 ]

# full after the first few frames: the end records bring a second clock sample, so timestamps
# are nanoseconds, not ticks
(ulimit -f 64 && limit env ACTORTRACE_OUT="$TMP/early.trace" LD_PRELOAD="$LIB" "$P" 100000 >/dev/null 2>&1)
"$DECODE" -o "$TMP/early.jsonl" "$TMP/early.trace" 2>"$TMP/early.err"
check "32 KiB limit: the trace ends cleanly" [ "$(summary "$TMP/early.jsonl" truncated)" = false ]
check "32 KiB limit: two clock samples at least" lacks "$TMP/early.err" "only one CLOCK"

# The writer gathers frames and writes several at once; a write that fails while a block is
# being added must not be followed by another. Blocks of 128 KiB in a 1 MiB pool make most
# writes happen in the middle of a pass over the full blocks, where that case is; three runs.
for i in 1 2 3; do
    (ulimit -f 4096 && limit env ACTORTRACE_BLOCK_KB=128 ACTORTRACE_BUFFER_MB=1 ACTORTRACE_MODE=block \
        ACTORTRACE_OUT="$TMP/mid$i.trace" LD_PRELOAD="$LIB" "$P" $ROUNDS >"$TMP/mid$i.out" 2>"$TMP/mid$i.err")
    equal "failure in the middle of a batch, run $i: one line on stderr" "$(wc -l <"$TMP/mid$i.err")" 1
    "$DECODE" -o "$TMP/mid$i.jsonl" "$TMP/mid$i.trace" 2>/dev/null
    equal "failure in the middle of a batch, run $i: written + not written = every event" \
        $(($(summary "$TMP/mid$i.jsonl" events) + $(summary "$TMP/mid$i.jsonl" dropped))) \
        "$(all_events "$TMP/mid$i.out")"
    rm -f "$TMP/mid$i.trace" "$TMP/mid$i.jsonl"
done
