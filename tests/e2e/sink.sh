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
run small 600000
run large 2400000
"$DECODE" -o "$TMP/small.jsonl" "$TMP/small.trace"
j="$TMP/small.jsonl"
s="$TMP/small.stats"

# from the JSONL: the sends to each actor (0: none known)
jq -n -c '[inputs | select(.event == "send") | .actor // 0] | group_by(.) | map([.[0], length])' "$j" \
    >"$TMP/per_actor"
equal "every send is never handled" "$(jq .matching.unhandled_sends "$s")" "$(kind_count "$j" send)"
equal "sends past an actor's first $CAP are given up" "$(jq .matching.given_up_sends "$s")" \
    "$(jq --argjson cap "$CAP" 'map(.[1] - $cap | if . > 0 then . else 0 end) | add' "$TMP/per_actor")"
equal "each actor's sends counted, depth capped at $CAP" \
    "$(jq -c '[.actors[] | [.actor, .received, .max_depth]]' "$s")" \
    "$(jq -c --argjson cap "$CAP" 'map(select(.[0] != 0) | . + [if .[1] < $cap then .[1] else $cap end])' "$TMP/per_actor")"
equal "JSONL: a send to no known actor has no actor field" "$(grep -c '"actor":0[,}]' "$j")" 0
equal "JSONL: there are such sends" "$(jq 'any(.[0] == 0)' "$TMP/per_actor")" true
# four times the events, the same memory (within 16 MiB: allocator and output buffers)
rss_small=$(tail -n 1 "$TMP/small.rss")
rss_large=$(tail -n 1 "$TMP/large.rss")
check "stats memory does not grow with unreceived sends (${rss_small} KiB for $(jq .events "$s") events, ${rss_large} KiB for $(jq .events "$TMP/large.stats"))" \
    [ $((rss_large - rss_small)) -lt 16384 ]
