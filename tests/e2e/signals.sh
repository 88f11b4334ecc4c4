#!/bin/sh
# Signal handlers that record on the thread they interrupted, 1, 2 and 4 events per handler
# every 20 us, with 4 KiB blocks so that handlers often meet a full block (between the
# interrupted call's slot and its commit): nothing is lost, counted twice or torn, and each
# actor's events keep their order. (Block mode: the loop records faster than any writer can
# write, and the test is about the handlers, not drops.)
. "$(dirname "$0")/../lib.sh"

ordered() { # ordered ACTOR FIRST JSONL: ACTOR's sends carry FIRST, FIRST+1, ... in trace order
    jq -n -e --argjson a "$1" --argjson first "$2" '
        reduce (inputs | select(.event == "send" and .actor == $a) | .msg // 0) as $m
            ({ok: true, next: $first}; {ok: (.ok and $m == .next), next: ($m + 1)}) | .ok' \
        "$3" >/dev/null
}

for per in 1 2 4; do
    ACTORTRACE_MODE=block ACTORTRACE_BLOCK_KB=4 ACTORTRACE_OUT="$TMP/s$per.trace" \
        LD_PRELOAD="$LIB_NOP" "$B/tests/progs/sigrec" 1000000 $per >"$TMP/s.out" 2>"$TMP/s.err"
    check "$per per handler: runs traced" [ $? -eq 0 ]
    "$DECODE" -o "$TMP/s.jsonl" "$TMP/s$per.trace"
    check "$per per handler: decodes cleanly" [ $? -eq 0 ]
    handled=$(truth "$TMP/s.out" handler_send)
    check "$per per handler: the timer interrupted the loop ($handled sends)" [ "$handled" -gt 10 ]
    equal "$per per handler: every send is in the trace" "$(kind_count "$TMP/s.jsonl" send)" \
        "$(truth "$TMP/s.out" send)"
    equal "$per per handler: every handler's send is in the trace" \
        "$(sends_of "$TMP/s.jsonl" 2)" "$handled"
    equal "$per per handler: no torn slot" "$(summary "$TMP/s.jsonl" torn)" 0
    equal "$per per handler: dropped" "$(summary "$TMP/s.jsonl" dropped)" 0
    check "$per per handler: the loop's sends are in order, each once" ordered 1 0 "$TMP/s.jsonl"
    check "$per per handler: the handler's sends are in order, each once" \
        ordered 2 1 "$TMP/s.jsonl"
done

# A storm: 50 sends per handler every 10 us, so that handlers fill whole blocks and spares
# while the loop's call (or another handler) is inside the slow path, between finding the
# spare full and replacing it, or between replacing it and taking its slot. What a full spare
# cannot hold is dropped and counted; nothing may be torn or lost uncounted. Several runs: the
# windows are short, and one run meets them most of the time, not always. A timer every 30 us:
# a handler of 50 sends that takes longer than the interval (10 to 15 us on some machines, in
# block mode with 4 KiB blocks) would have the next one pending as it returns, and the loop
# would never go on; 2,000,000 sends give some 10,000 handlers.
storm_torn=0
storm_uncounted=0
for run in 1 2 3 4 5; do
    rm -f "$TMP/storm.trace"
    ACTORTRACE_MODE=block ACTORTRACE_BLOCK_KB=4 ACTORTRACE_OUT="$TMP/storm.trace" \
        LD_PRELOAD="$LIB_NOP" timeout 120 "$B/tests/progs/sigrec" 2000000 50 30 \
        >"$TMP/storm.out" 2>"$TMP/storm.err"
    "$DECODE" "$TMP/storm.trace" 2>/dev/null | tail -n 1 >"$TMP/storm.summary"
    storm_torn=$((storm_torn + $(jq -r .torn "$TMP/storm.summary")))
    counted=$(jq -r '.events + .dropped' "$TMP/storm.summary")
    [ "$counted" = "$(truth "$TMP/storm.out" send)" ] || storm_uncounted=$((storm_uncounted + 1))
done
equal "a storm of handlers, 5 runs: no torn slot" "$storm_torn" 0
equal "a storm of handlers, 5 runs: runs with a send neither traced nor counted as dropped" \
    "$storm_uncounted" 0

# Only handlers record: a handler never starts the recorder, so each of their 1000 sends is
# dropped. The process's end starts it, and the trace counts them, rather than there being no
# trace at all.
ACTORTRACE_OUT="$TMP/only.trace" LD_PRELOAD="$LIB_NOP" limit "$B/tests/progs/sigrec" 1000 1 20 only \
    >"$TMP/only.out" 2>"$TMP/only.err"
check "only handlers record: runs traced" [ $? -eq 0 ]
"$DECODE" -o "$TMP/only.jsonl" "$TMP/only.trace"
check "only handlers record: a trace, which decodes cleanly" [ $? -eq 0 ]
equal "only handlers record: every send dropped and counted" \
    "$(kind_count "$TMP/only.jsonl" send),$(summary "$TMP/only.jsonl" dropped)" \
    "0,$(truth "$TMP/only.out" handler_send)"

nop_run() { # nop_run NAME MODE PROGRAM ARGS...: traced with the nop shim in MODE into
    # $TMP/NAME.trace (120 s at most), output in $TMP/NAME.out, decoded to $TMP/NAME.jsonl;
    # returns the program's status
    nop_name=$1 nop_mode=$2
    shift 2
    rm -f "$TMP/$nop_name.trace"
    ACTORTRACE_MODE=$nop_mode ACTORTRACE_BLOCK_KB=4 ACTORTRACE_OUT="$TMP/$nop_name.trace" \
        LD_PRELOAD="$LIB_NOP" timeout 120 "$@" >"$TMP/$nop_name.out" 2>"$TMP/$nop_name.err"
    nop_status=$?
    "$DECODE" -o "$TMP/$nop_name.jsonl" "$TMP/$nop_name.trace" 2>/dev/null
    return $nop_status
}

# Jumps out of handlers (siglongjmp): the thread must go on recording. A SIGSEGV handler that
# jumps back from a probe of an unmapped address before the first event (the recorder then
# starts), on the thread's stack, on an alternate stack below it and on one above it; and 100
# probes after the first event.
for args in "1 1000" "1 1000 altstack" "1 1000 altstack-high" "100 1000 altstack late"; do
    # shellcheck disable=SC2086 # the arguments are words
    nop_run probe drop "$B/tests/progs/jump_probe" $args
    check "probe, jump out of the handler ($args): runs traced" [ $? -eq 0 ]
    equal "probe, jump out of the handler ($args): every send is in the trace" \
        "$(sends_of "$TMP/probe.jsonl" 1)" "$(truth "$TMP/probe.out" send)"
    equal "probe, jump out of the handler ($args): dropped" \
        "$(summary "$TMP/probe.jsonl" dropped)" 0
done

# A watchdog: a SIGALRM every 20 us jumps out of the send (and the recording call) it
# interrupts, thousands of times; then 100,000 sends with the timer off must all be traced, in
# drop and block mode, 4 KiB blocks. A send the jump cut may be traced or not, and its slot,
# when it took one, is counted as torn; every other send of the timed phase is traced.
for mode in drop block; do
    nop_run watchdog $mode "$B/tests/progs/jump_watchdog" 1000000 100000 20
    check "watchdog, $mode mode: runs traced" [ $? -eq 0 ]
    cut=$(truth "$TMP/watchdog.out" send_cut)
    check "watchdog, $mode mode: the timer cut sends ($cut)" [ "$cut" -gt 100 ]
    equal "watchdog, $mode mode: every send after the timer is in the trace" \
        "$(sends_of "$TMP/watchdog.jsonl" 2)" 100000
    timed=$(sends_of "$TMP/watchdog.jsonl" 1)
    returned=$(($(truth "$TMP/watchdog.out" send_returned) - 1))
    check "watchdog, $mode mode: every send that returned is traced, a cut one at most once" \
        [ "$timed" -ge "$returned" ] && [ "$timed" -le $((returned + cut)) ]
    torn=$(summary "$TMP/watchdog.jsonl" torn)
    check "watchdog, $mode mode: torn slots ($torn) only from cut sends" [ "$torn" -le "$cut" ]
    equal "watchdog, $mode mode: dropped" "$(summary "$TMP/watchdog.jsonl" dropped)" 0
done

# The same with call stacks on sends: a jump out of a capture must not leave the thread's
# captures skipped for good (before: all 10,000 sends after the timer "stack_skipped").
export ACTORTRACE_STACKS=send
nop_run watchdog_stacks drop "$B/tests/progs/jump_watchdog" 200000 10000 20
unset ACTORTRACE_STACKS
equal "watchdog, stacks on: every send after the timer has its stack" "$(jq -c \
    'select(.event == "send" and .actor == 2 and .stack != null)' "$TMP/watchdog_stacks.jsonl" |
    wc -l)" 10000
# Threads whose only events come from handlers: the main thread, whose SIGUSR1 handler sends a
# stop message (100 times), and a thread whose handlers run after the recorder's thread-exit
# destructor (20 times). Block mode keeps every one; in drop mode too (the writer keeps up),
# and whatever would be dropped is named in a LOST record.
lost_sum() { # lost_sum JSONL: the counts of the summary's LOST records
    tail -n 1 "$1" | jq '[.lost[].count] | add // 0'
}
for mode in block drop; do
    for args in "main 100" "exiting 20"; do
        # shellcheck disable=SC2086 # the arguments are words
        nop_run only $mode "$B/tests/progs/handler_only" $args
        check "handler-only ($args), $mode mode: runs traced" [ $? -eq 0 ]
        equal "handler-only ($args), $mode mode: every handler's send is in the trace" \
            "$(sends_of "$TMP/only.jsonl" 2)" "$(truth "$TMP/only.out" handler_send)"
        equal "handler-only ($args), $mode mode: every drop is in a LOST record" \
            "$(lost_sum "$TMP/only.jsonl")" "$(summary "$TMP/only.jsonl" dropped)"
    done
done

# Churn: 300 threads, 30 at a time, a SIGALRM every 100 us landing on threads that have not
# recorded yet or are ending, a fork every 20 ms. Block mode keeps every send (before: about 30
# of 3,000 dropped, 2 of them in no LOST record); drop mode names every drop.
for mode in block block drop; do
    nop_run churn $mode "$B/tests/progs/handler_churn" 300 30 10
    check "churn, $mode mode: runs traced" [ $? -eq 0 ]
    check "churn, $mode mode: handlers sent" [ "$(truth "$TMP/churn.out" handler_send)" -gt 0 ]
    sent=$(kind_count "$TMP/churn.jsonl" send)
    dropped=$(summary "$TMP/churn.jsonl" dropped)
    equal "churn, $mode mode: every send traced or counted as dropped" $((sent + dropped)) \
        "$(truth "$TMP/churn.out" send)"
    [ $mode = block ] && equal "churn, block mode: dropped" "$dropped" 0
    equal "churn, $mode mode: every drop is in a LOST record" "$(lost_sum "$TMP/churn.jsonl")" \
        "$dropped"
done
