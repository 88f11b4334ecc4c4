#!/bin/sh
# Programs that make the tracer's life hard, each made certain by repetition: the traced
# program must behave exactly as untraced (no hang, same status) and the trace stay whole.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs"

# _exit from a signal handler while the main thread registers names (the tracer's metadata
# lock and malloc busy) and another thread records: 50 runs, each must end with status 3.
hung=0 wrong=0
for run in $(seq 50); do
    timeout -s KILL 20 env ACTORTRACE_OUT="$TMP/exit.trace" LD_PRELOAD="$LIB_NOP" \
        "$P/exit_in_signal" 2>/dev/null
    status=$?
    [ $status -eq 137 ] && hung=$((hung + 1))
    [ $status -ne 3 ] && [ $status -ne 137 ] && wrong=$((wrong + 1))
    rm -f "$TMP/exit.trace"
done
equal "_exit in a handler: runs that hung (of 50)" $hung 0
equal "_exit in a handler: runs with another status (of 50)" $wrong 0

# Overwrite mode, SIGUSR2 sent every 20 us until the process has exited: the signal asks for a
# dump and never ends the program, not even while the trace finishes. 10 runs.
bad=0
for run in $(seq 10); do
    ACTORTRACE_MODE=overwrite timeout -s KILL 60 env ACTORTRACE_OUT="$TMP/dump$run.trace" \
        LD_PRELOAD="$LIB_NOP" "$P/dump_storm" 200000 >"$TMP/dump$run.out" 2>/dev/null ||
        bad=$((bad + 1))
done
equal "overwrite, SIGUSR2 storm: runs not ending with status 0 (of 10)" $bad 0
"$DECODE" -o "$TMP/dump.jsonl" "$TMP/dump10.trace" 2>/dev/null
check "overwrite, SIGUSR2 storm: the last run's trace ends cleanly" [ $? -eq 0 ]
equal "overwrite, SIGUSR2 storm: kept + overwritten = sent" \
    $(($(kind_count "$TMP/dump.jsonl" send) + $(summary "$TMP/dump.jsonl" dropped))) \
    "$(truth "$TMP/dump10.out" send)"

# The program closes descriptors 3..1023 and opens a file of its own, which gets one of those
# numbers: nothing of the trace goes into it, and the tracer says once that it stopped writing.
limit env LD_PRELOAD="$LIB_NOP" ACTORTRACE_OUT="$TMP/fds.trace" "$P/close_fds" "$TMP/own.txt" 2000000 \
    >"$TMP/fds.out" 2>"$TMP/fds.err"
check "closed descriptors: program succeeds" [ $? -eq 0 ]
equal "closed descriptors: the program's file holds only its 410 bytes" \
    "$(truth "$TMP/fds.out" file_intact) $(stat -c %s "$TMP/own.txt")" "1 410"
equal "closed descriptors: the tracer says so once" \
    "$(grep -c 'closed or reused descriptor' "$TMP/fds.err")" 1
"$DECODE" "$TMP/fds.trace" >/dev/null 2>&1
check "closed descriptors: what was written before decodes" [ $? -le 1 ]

# The same while the writer grows the ring: the test copy's writer holds the ring file's
# descriptor 300 ms in each step of growth, in which the program, its events dropped meanwhile,
# closes every descriptor and opens its file. The writer must not write to, truncate or close
# the program's file, whatever number it got.
for run in 1 2 3; do
    limit env LD_PRELOAD="$LIB_NOP_HOOKS" ACTORTRACE_TEST_GROW_DELAY_MS=300 \
        ACTORTRACE_OUT="$TMP/fdgrow$run.trace" "$P/close_fds" "$TMP/own$run.txt" 200000 \
        >"$TMP/fdgrow$run.out" 2>"$TMP/fdgrow$run.err"
    check "closed descriptors while the ring grows, run $run: program succeeds" [ $? -eq 0 ]
    equal "closed descriptors while the ring grows, run $run: the program's file is its own" \
        "$(truth "$TMP/fdgrow$run.out" file_intact) $(stat -c %s "$TMP/own$run.txt")" "1 410"
    equal "closed descriptors while the ring grows, run $run: the ring grows on" \
        "$(grep -c 'cannot grow' "$TMP/fdgrow$run.err")" 0
done

# A signal handler's event is the first of its thread, or of the process, while the thread it
# interrupts is inside malloc: nothing is started in the handler (the event is dropped and
# counted). 10 runs each; none may hang or crash, and kept + dropped = sent.
for mode in thread process; do
    bad=0
    for run in $(seq 10); do
        timeout -s KILL 30 env ACTORTRACE_OUT="$TMP/first.trace" LD_PRELOAD="$LIB_NOP" \
            "$P/first_in_handler" $mode >"$TMP/first.out" 2>/dev/null || bad=$((bad + 1))
        "$DECODE" -o "$TMP/first.jsonl" "$TMP/first.trace" 2>/dev/null
        [ $? -le 1 ] && [ $(($(kind_count "$TMP/first.jsonl" send) + \
            $(summary "$TMP/first.jsonl" dropped))) -eq "$(truth "$TMP/first.out" send)" ] ||
            bad=$((bad + 1))
        rm -f "$TMP/first.trace"
    done
    equal "first event in a handler ($mode): runs that hung, failed or lost count (of 10)" $bad 0
done

# The process ends on several threads at once: every thread calls exit() (glibc runs the exit
# handlers, and the tracer's finish, on one of them, and ends the process from whichever gets
# to its _exit first), or half call exit() and half _exit(); or the program leaves with
# quick_exit(), whose handler records once more. In every run: status 0, the trace whole (its
# end record, nothing truncated or dropped), every send in it, and no ring file left behind.
# 8 threads: without the wait for the finishing thread, 8 runs in 8 were cut short.
rings="$TMP/exit_rings"
mkdir -p "$rings"
for how in exit_all exit_mixed quick; do
    bad=0
    for run in $(seq 10); do
        timeout -s KILL 30 env ACTORTRACE_RING_DIR="$rings" ACTORTRACE_OUT="$TMP/race.trace" \
            LD_PRELOAD="$LIB_NOP" "$P/exit_race" 8 20000 $how >"$TMP/race.out" 2>/dev/null &&
            "$DECODE" -o "$TMP/race.jsonl" "$TMP/race.trace" 2>/dev/null &&
            [ "$(summary "$TMP/race.jsonl" truncated)" = false ] &&
            [ "$(summary "$TMP/race.jsonl" dropped)" = 0 ] &&
            [ "$(kind_count "$TMP/race.jsonl" send)" -eq "$(truth "$TMP/race.out" send)" ] ||
            bad=$((bad + 1))
        rm -f "$TMP/race.trace"
    done
    equal "$how: runs that failed, were cut short or lost a send (of 10)" $bad 0
    equal "$how: ring files left behind" "$(ls "$rings" | wc -l)" 0
    rm -f "$rings"/*
done
