#!/bin/sh
# Sends that are never received (the benchmark's nop_send loop: every message id new, no recv,
# no step) cost the stats view a count each, not memory: it reports them all as never handled,
# those past an actor's first 65,536 as given up, and its memory does not grow with the trace.
. "$(dirname "$0")/../lib.sh"
CAP=65536

run() { # run NAME CALLS: traces the loop in block mode (nothing dropped) and runs stats on it
    ACTORTRACE_MODE=block traced_nop "$TMP/$1.trace" "$B/bench/hotpath" "$2" >/dev/null
    /usr/bin/time -f %M -o "$TMP/$1.rss" "$DECODE" -j 1 -f stats --json -o "$TMP/$1.stats" "$TMP/$1.trace"
    check "$1: stats exit 0" [ $? -eq 0 ]
}
run small 1000000
run large 4000000
"$DECODE" -o "$TMP/small.jsonl" "$TMP/small.trace"
j="$TMP/small.jsonl"
s="$TMP/small.stats"

sends=$(kind_count "$j" send)
equal "every send is never handled" "$(jq .matching.unhandled_sends "$s")" "$sends"
# the sends to each actor past its first CAP, and those to no known actor past CAP
want=$(jq -n --argjson cap "$CAP" '[inputs | select(.event == "send") | .actor // 0] | group_by(.)
    | map(length - $cap | if . > 0 then . else 0 end) | add' "$j")
equal "sends past an actor's first $CAP are given up" "$(jq .matching.given_up_sends "$s")" "$want"
equal "each actor's sends counted, depth capped at $CAP" \
    "$(jq -c '[.actors[] | [.actor, .received, .max_depth]]' "$s")" \
    "$(jq -n -c --argjson cap "$CAP" '[inputs | select(.event == "send" and .actor) | .actor] | group_by(.)
        | map([.[0], length, (if length < $cap then length else $cap end)])' "$j")"
equal "JSONL: a send to no known actor has no actor field" \
    "$(grep -c '"actor":0[,}]' "$j")" 0
check "JSONL: there are such sends" grep -q '"event":"send","msg' "$j"
# four times the events, the same memory (within 16 MiB: allocator and output buffers)
rss_small=$(tail -n 1 "$TMP/small.rss")
rss_large=$(tail -n 1 "$TMP/large.rss")
check "stats memory does not grow with unreceived sends (${rss_small} KiB for $(jq .events "$s") events, ${rss_large} KiB for $(jq .events "$TMP/large.stats"))" \
    [ $((rss_large - rss_small)) -lt 16384 ]
