#!/bin/sh
# The benchmark's instruments measure what their labels say (figures are make bench's; nothing
# here is timed): hotpath --floor really stores into its buffer, which the compiler once
# deleted, leaving rdtsc alone; libthreadcpu.so reports the writer thread's CPU time once, and
# tracing under it still writes the whole trace; codec re-encodes every event of a trace, and
# refuses what is not one.
. "$(dirname "$0")/../lib.sh"

# The floor loop: rdtsc, then two 8-byte stores into the thread-local buffer, each iteration.
objdump -d --no-show-raw-insn "$B/bench/hotpath" | awk '/<floor_loop>:/,/^$/' >"$TMP/floor.s"
check "hotpath: floor_loop is a function of its own" [ -s "$TMP/floor.s" ]
check "hotpath: floor_loop reads the timestamp counter" grep -q rdtsc "$TMP/floor.s"
stores=$(awk '/rdtsc/ { on = 1 } on && /^ *[0-9a-f]+:\tmov +%r[a-z0-9]+,(0x[0-9a-f]+)?\(%r/ { n++ }
    on && /\tj[a-z]+ / { exit } END { print n + 0 }' "$TMP/floor.s")
equal "hotpath: floor_loop stores 2 words per iteration after rdtsc" "$stores" 2

# The writer's CPU time, from a thread that returns only after the end of the trace.
limit env ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/h.trace" THREADCPU_OUT="$TMP/writer.ns" \
    LD_PRELOAD="$B/bench/libthreadcpu.so $LIB_NOP" "$B/bench/hotpath" 200000 >/dev/null
check "threadcpu: one figure, for the writer thread" [ "$(wc -l <"$TMP/writer.ns")" = 1 ]
check "threadcpu: the writer used some CPU time ($(cat "$TMP/writer.ns") ns)" \
    [ "$(cat "$TMP/writer.ns")" -gt 0 ]
"$DECODE" -o "$TMP/h.jsonl" "$TMP/h.trace"
equal "threadcpu: the trace is whole (status 0)" $? 0
equal "threadcpu: every call recorded" "$(summary "$TMP/h.jsonl" events)" $((200000 + 100000))

# codec: the writer's encoding and compression, apart from the program (tests/bench/writer.sh).
out=$("$B/bench/codec" "$TMP/h.trace")
equal "codec: exits 0 on a trace" $? 0
equal "codec: every event of the trace re-encoded" \
    "$(echo "$out" | sed -n 's/.*(\([0-9]*\) events in.*/\1/p')" $((200000 + 100000))
check "codec: encode and zstd figures ($out)" \
    sh -c "echo '$out' | grep -Eq '^encode [0-9.]+ ns/event, zstd [0-9.]+ ns/event'"
limit "$B/bench/codec" "$TMP/h.jsonl" 2>"$TMP/codec.err"
equal "codec: exits 1 on a file that is not a trace" $? 1
check "codec: says why" grep -q "not an actortrace trace" "$TMP/codec.err"
