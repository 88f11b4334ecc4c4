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
# windows are short, and one run meets them most of the time, not always.
storm_torn=0
storm_uncounted=0
for run in 1 2 3 4 5; do
    rm -f "$TMP/storm.trace"
    ACTORTRACE_MODE=block ACTORTRACE_BLOCK_KB=4 ACTORTRACE_OUT="$TMP/storm.trace" \
        LD_PRELOAD="$LIB_NOP" "$B/tests/progs/sigrec" 100000 50 10 >"$TMP/storm.out" \
        2>"$TMP/storm.err"
    "$DECODE" "$TMP/storm.trace" 2>/dev/null | tail -n 1 >"$TMP/storm.summary"
    storm_torn=$((storm_torn + $(jq -r .torn "$TMP/storm.summary")))
    counted=$(jq -r '.events + .dropped' "$TMP/storm.summary")
    [ "$counted" = "$(truth "$TMP/storm.out" send)" ] || storm_uncounted=$((storm_uncounted + 1))
done
equal "a storm of handlers, 5 runs: no torn slot" "$storm_torn" 0
equal "a storm of handlers, 5 runs: runs with a send neither traced nor counted as dropped" \
    "$storm_uncounted" 0
