#!/bin/sh
# The benchmark's instruments measure what their labels say (figures are make bench's; nothing
# here is timed): hotpath --floor really stores into its buffer, which the compiler once
# deleted, leaving rdtsc alone; libthreadcpu.so reports the writer thread's CPU time once, and
# tracing under it still writes the whole trace; codec re-encodes every event of a trace, and
# refuses what is not one; the floor variant of the library (tests/bench/programs.sh) records
# with one rdtsc and a 16-byte store, starts no writer, and is not in the product.
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
out=$("$B/bench/codec" "$TMP/h.trace" first)
equal "codec first: exits 0, every event re-encoded, each frame timed once" \
    "$?:$(echo "$out" | sed -n 's/.*(\([0-9]*\) events in.*first passes.*/\1/p')" \
    "0:$((200000 + 100000))"
limit "$B/bench/codec" "$TMP/h.jsonl" 2>"$TMP/codec.err"
equal "codec: exits 1 on a file that is not a trace" $? 1
check "codec: says why" grep -q "not an actortrace trace" "$TMP/codec.err"

# codec predicted: the same events in the predicted encoding, each frame checked to decode as
# it was; and a trace written in that encoding is read as well.
out=$("$B/bench/codec" "$TMP/h.trace" predicted)
equal "codec predicted: exits 0, every event re-encoded and decoded again" \
    "$?:$(echo "$out" | sed -n 's/.*(\([0-9]*\) events in.*/\1/p')" "0:$((200000 + 100000))"
ACTORTRACE_ENCODING=predicted ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/p.trace" \
    LD_PRELOAD="$LIB_NOP" "$B/bench/hotpath" 200000 >/dev/null
out=$("$B/bench/codec" "$TMP/p.trace")
equal "codec: reads a trace in the predicted encoding" \
    "$?:$(echo "$out" | sed -n 's/.*(\([0-9]*\) events in.*/\1/p')" "0:$((200000 + 100000))"

# The floor variant (tests/bench/programs.sh): the same shims, each event one rdtsc and a store
# of 16 bytes, no recorder; never in the product.
FLOOR_NOP="$B/bench/floor/libactortrace-bench.so"
nm -D "$PRODUCT_LIB" | grep -q at__floor
check "the product library has no floor recording" [ $? -ne 0 ]
objdump -d --no-show-raw-insn "$FLOOR_NOP" | awk '/<nop_send>:/,/^$/' >"$TMP/floor-nop.s"
equal "floor variant: nop_send's wrapper reads the timestamp counter once" \
    "$(grep -c rdtsc "$TMP/floor-nop.s")" 1
stores=$(awk '/rdtsc/ { on = 1 } on && /\tmov +%r[a-z0-9]+,(0x[0-9a-f]+)?\(%r/ { n++ }
    on && /\tjmp / { exit } END { print n + 0 }' "$TMP/floor-nop.s")
equal "floor variant: and stores 2 words after it" "$stores" 2
rm -f "$TMP/writer.ns"
ACTORTRACE_OUT="$TMP/floor.trace" THREADCPU_OUT="$TMP/writer.ns" \
    LD_PRELOAD="$B/bench/libthreadcpu.so $B/bench/floor/libactortrace.so" \
    "$B/static/aether/forkjoin" 8 500 >"$TMP/floor.out"
equal "floor variant: the Aether stand-in's fork/join runs (linked in, patched)" $? 0
"$B/static/aether/forkjoin" 8 500 >"$TMP/plain.out"
counts() { grep '^{"ground_truth"' "$1" | jq -c '.ground_truth | {send, step, spawn, exit}'; }
equal "floor variant: the same counts as untraced" "$(counts "$TMP/floor.out")" "$(counts "$TMP/plain.out")"
check "floor variant: no trace written" [ ! -e "$TMP/floor.trace" ]
check "floor variant: no writer thread" [ ! -s "$TMP/writer.ns" ]
# the shims do run under it: the Aether shim's step wrapper is reached
timeout 60 gdb -q -batch -ex 'set breakpoint pending on' \
    -ex "set environment LD_PRELOAD=$B/bench/floor/libactortrace.so" -ex 'break step_trampoline' \
    -ex run -ex kill --args "$B/static/aether/forkjoin" 8 50 >"$TMP/gdb.out" 2>&1
check "floor variant: the Aether shim's step wrapper runs (a breakpoint in step_trampoline is hit)" \
    grep -q 'hit Breakpoint 1, step_trampoline' "$TMP/gdb.out"

# The floor variant without its clock (tests/bench/beam.sh): the same wrappers, each event the
# floor's store alone.
NOCLOCK="$B/bench/noclock/libactortrace.so"
beam_clock_reads() { # the rdtsc in three of the BEAM shim's wrappers in library $1
    objdump -d --no-show-raw-insn "$1" | awk '
        /^[0-9a-f]+ <(erts_schedule|erts_queue_proc_message|_Z23beam_jit_remove_messageP7processlPmS1_j)>:$/ { on = 1; next }
        /^$/ { on = 0 }
        on && /rdtsc/ { n++ }
        END { print n + 0 }'
}
check "floor variant: the BEAM's wrappers read the clock" \
    [ "$(beam_clock_reads "$B/bench/floor/libactortrace.so")" -ge 3 ]
equal "floor variant without its clock: the BEAM's wrappers read none" \
    "$(beam_clock_reads "$NOCLOCK")" 0
ACTORTRACE_OUT="$TMP/noclock.trace" LD_PRELOAD="$NOCLOCK" "$B/static/aether/forkjoin" 8 500 \
    >"$TMP/noclock.out"
equal "floor variant without its clock: the fork/join runs, with the same counts as untraced" \
    "$?:$(counts "$TMP/noclock.out")" "0:$(counts "$TMP/plain.out")"
check "floor variant without its clock: no trace written" [ ! -e "$TMP/noclock.trace" ]

# The copies that time the writer by phase (tests/bench/programs.sh): one line a run, each phase
# a share of the writer's CPU time, every event of the trace counted; the product has none of it.
PHASES="$B/bench/phases/libactortrace-bench.so"
rm -f "$TMP/phases"
limit env ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/ph.trace" PHASES_OUT="$TMP/phases" \
    LD_PRELOAD="$PHASES" "$B/bench/hotpath" 200000 >/dev/null
equal "phases: the traced run exits 0 and writes one line" "$?:$(wc -l <"$TMP/phases")" "0:1"
check "phases: the line has every phase ($(cat "$TMP/phases"))" grep -Eq \
    '^encode [0-9]+ pack [0-9]+ grow [0-9]+ write [0-9]+ clear [0-9]+ writer [0-9]+ events [0-9]+$' \
    "$TMP/phases"
equal "phases: its events are the trace's" "$(awk '{ print $14 }' "$TMP/phases")" \
    "$("$DECODE" -f stats --json "$TMP/ph.trace" | jq .events)"
check "phases: encoding and packing took some of the writer's time, the phases no more than all of it" \
    awk '{ exit !($2 > 0 && $4 > 0 && $2 + $4 + $6 + $8 + $10 <= $12) }' "$TMP/phases"
check "phases: the product library does not time them" \
    sh -c "! grep -q PHASES_OUT '$PRODUCT_LIB'"
