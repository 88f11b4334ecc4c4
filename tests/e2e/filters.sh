#!/bin/sh
# tracedecode's filters select exactly the events they describe (each checked against a jq
# selection over the unfiltered JSONL), --names renames, several files merge on one timeline,
# and bad filter values are usage errors.
. "$(dirname "$0")/../lib.sh"

traced "$TMP/pp.trace" "$B/examples/pingpong" 2000 >"$TMP/pp.out" 2>/dev/null
traced "$TMP/ring.trace" "$B/examples/ring" 4 100 >"$TMP/ring.out" 2>/dev/null
"$DECODE" -o "$TMP/all.jsonl" "$TMP/pp.trace"
check "unfiltered decode" [ $? -eq 0 ]
jq -c 'select(.summary | not)' "$TMP/all.jsonl" >"$TMP/events"

selects() { # selects NAME JQ_SELECTION FILTER_OPTIONS...: the filter keeps exactly those events
    name=$1 want=$2
    shift 2
    "$DECODE" -o "$TMP/f.jsonl" "$@" "$TMP/pp.trace"
    jq -c 'select(.summary | not)' "$TMP/f.jsonl" >"$TMP/got"
    jq -c "select($want)" "$TMP/events" >"$TMP/want"
    n=$(wc -l <"$TMP/want")
    check "$name: selects exactly the $n events of $want" sh -c \
        "[ $n -gt 0 ] && cmp -s '$TMP/got' '$TMP/want' && [ \$(tail -n 1 '$TMP/f.jsonl' | jq .events) -eq $n ]"
}

pong=$(jq -r 'select(.actor_name == "pong") | .actor' "$TMP/events" | head -n 1)
is_pong=".actor == $pong or ((.event == \"send\" or .event == \"recv\") and .sender == $pong)"
selects "--actor NAME" "$is_pong" --actor pong
selects "--actor ID" "$is_pong" --actor "$pong"
selects "--event" '.event == "send" or .event == "recv"' --event send,recv
selects "--event, repeated" '.event == "send" or .event == "recv"' --event send --event recv
selects "--msg NAME" '.msg_name == "PING"' --msg PING
selects "--msg ID" '.msg == 7' --msg 7
tid=$(jq -r .tid "$TMP/events" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
selects "--tid" ".tid == $tid" --tid "$tid"
first=$(jq -s '.[0].ts_ns' "$TMP/events")
from=$(jq -s '.[1000].ts_ns' "$TMP/events")
to=$(jq -s '.[3000].ts_ns' "$TMP/events")
selects "--from/--to" ".ts_ns >= $from and .ts_ns <= $to" --from "$from" --to "$to"
selects "--from +DURATION" ".ts_ns >= $from" --from "+$((from - first))ns"
selects "--to +DURATION in us" ".ts_ns <= $first + 100000" --to +100us
selects "filters combine" ".event == \"send\" and .msg_name == \"PONG\"" --event send --msg PONG

"$DECODE" -o /dev/null --event bogus "$TMP/pp.trace" 2>"$TMP/err"
check "--event with an unknown kind: exit 2 and a message" sh -c "[ $? -eq 2 ] && grep -q bogus '$TMP/err'"
"$DECODE" -o /dev/null --from 12parsecs "$TMP/pp.trace" 2>"$TMP/err"
check "--from that is not a time: exit 2 and a message" sh -c "[ $? -eq 2 ] && grep -q 12parsecs '$TMP/err'"

# filters apply before every format: stats counts only what passes
"$DECODE" -f stats --json --event send -o "$TMP/f.stats" "$TMP/pp.trace"
equal "stats after --event send: only sends" "$(jq -c .kinds "$TMP/f.stats")" \
    "{\"send\":$(kind_count "$TMP/all.jsonl" send)}"

# --names: message and actor names from a file replace the trace's own
printf '# names\n1 Begin\nmsg 2 Ping!\nactor %s Pong-actor\n' "$pong" >"$TMP/names"
"$DECODE" --names "$TMP/names" -o "$TMP/named.jsonl" "$TMP/pp.trace"
equal "--names: message names replaced" \
    "$(jq -r 'select(.event == "send") | .msg_name' "$TMP/named.jsonl" | LC_ALL=C sort -u | tr '\n' ' ')" \
    "Begin PONG Ping! "
equal "--names: actor names replaced" \
    "$(jq -r "select(.actor == $pong) | .actor_name" "$TMP/named.jsonl" | sort -u)" "Pong-actor"
printf 'PING 3\n' >"$TMP/badnames"
"$DECODE" --names "$TMP/badnames" -o /dev/null "$TMP/pp.trace" 2>"$TMP/err"
check "--names with a malformed line: exit 2 and the line number" sh -c "[ $? -eq 2 ] && grep -q ':1:' '$TMP/err'"

# several files on one timeline: every view counts both
"$DECODE" -o "$TMP/ring.jsonl" "$TMP/ring.trace"
"$DECODE" -f stats --json -o "$TMP/two.stats" "$TMP/pp.trace" "$TMP/ring.trace"
equal "two files: stats sends = the sum of both" "$(jq .kinds.send "$TMP/two.stats")" \
    "$(($(kind_count "$TMP/all.jsonl" send) + $(kind_count "$TMP/ring.jsonl" send)))"
equal "two files: no send left unmatched across processes" "$(jq .matching.unhandled_sends "$TMP/two.stats")" 0
"$DECODE" -f dot -o "$TMP/two.dot" "$TMP/pp.trace" "$TMP/ring.trace"
equal "two files: the graph has a cluster per process" "$(grep -c '^  subgraph cluster_' "$TMP/two.dot")" 2
"$DECODE" -f chrome -o "$TMP/two.json" "$TMP/pp.trace" "$TMP/ring.trace"
equal "two files: chrome names both processes" \
    "$(jq '[.traceEvents[] | select(.name == "process_name")] | length' "$TMP/two.json")" 2
