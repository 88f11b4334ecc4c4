#!/bin/sh
# Send -> handler matching on a real runtime: the CZMQ zloop ping-pong, whose reader steps begin
# before their recv and carry the message id but no name, and whose timer, poller and task
# steps handle no message. stats must equal a recomputation from the JSONL by message id, and
# every Perfetto flow must join a send to its recv and the step that handled it.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/proto/pftsv.sh"

name=zloop
traced "$TMP/$name.trace" "$B/tests/czmq/pingpong" zloop 2000 4 >"$TMP/$name.out"
"$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
check "$name: traced and decoded" [ $? -eq 0 ]
j="$TMP/$name.jsonl"
"$DECODE" -f stats --json -o "$TMP/$name.stats" "$TMP/$name.trace"
check "$name: stats --json is valid JSON" sh -c "jq -e . '$TMP/$name.stats' >/dev/null"

# The truth, by message id: a send names the message; the step_begin carrying its id handled it;
# a step's time runs from its begin to the end that closes it on its thread.
jq -n -c '[inputs | select(.event)] as $ev
    | (reduce ($ev[] | select(.event == "send")) as $s ({}; .[$s.msg | tostring] = $s)) as $send
    | (reduce ($ev[] | select(.event == "step_begin" or .event == "step_end")) as $e
        ({st: {}, out: []}; ($e.tid | tostring) as $t
            | if $e.event == "step_begin" then .st[$t] += [$e]
              elif (.st[$t] | length) > 0 then
                  .out += [.st[$t][-1] + {end: $e.ts_ns, outer: ((.st[$t] | length) == 1)}]
                  | .st[$t] |= .[:-1]
              else . end) | .out) as $steps
    | (reduce ($ev[] | select(.event == "recv" or (.event == "step_begin" and .msg)) | .msg | tostring)
        as $m ({}; .[$m] = true)) as $taken
    | [$steps[] | select(.msg and $send[.msg | tostring])
       | . + {sname: $send[.msg | tostring].msg_name, lat: (.ts_ns - $send[.msg | tostring].ts_ns)}] as $handled
    | {messages: ([$ev[] | select(.event == "send") | .msg_name] | unique | map(. as $n | {
          name: $n,
          sent: ([$ev[] | select(.event == "send" and .msg_name == $n)] | length),
          received: ([$ev[] | select(.event == "recv" and .msg_name == $n)] | length),
          handled: ([$handled[] | select(.sname == $n)] | length),
          handling_ns: ([$handled[] | select(.sname == $n) | .end - .ts_ns] | add // 0),
          latency: {count: ([$handled[] | select(.sname == $n)] | length),
                    max: ([$handled[] | select(.sname == $n) | .lat] | max // 0)}})),
       actors: ([$ev[] | select(.event == "spawn" or .event == "send") | .actor] | unique | map(. as $a | {
          actor: $a,
          steps: ([$ev[] | select(.event == "step_begin" and .actor == $a)] | length),
          busy_ns: ([$steps[] | select(.actor == $a and .outer) | .end - .ts_ns] | add // 0)})),
       matching: {
          by_id: ([$taken | keys[] | select($send[.])] | length),
          by_order: 0,
          unhandled_sends: ([$send | keys[] | select($taken[.] | not)] | length),
          steps_without_send: ([$ev[] | select(.event == "step_begin" and .msg and ($send[.msg | tostring] | not))] | length),
          recvs_without_send: ([$ev[] | select(.event == "recv" and ($send[.msg | tostring] | not))] | length),
          given_up_sends: 0,
          steps_without_message: ([$ev[] | select(.event == "step_begin"
                                   and (.path == "timer" or .path == "poller" or .path == "task"))] | length)}}' \
    "$j" >"$TMP/want.json"
jq -c '{messages: ([.messages[] | {name, sent, received, handled, handling_ns,
            latency: {count: .latency_ns.count, max: .latency_ns.max}}] | sort_by(.name)),
        actors: ([.actors[] | {actor, steps, busy_ns}] | sort_by(.actor)),
        matching: (.matching | to_entries | sort_by(.key) | from_entries)}' "$TMP/$name.stats" >"$TMP/got.json"
for part in messages actors matching; do
    equal "$name stats: $part = the JSONL's by message id" "$(jq -S -c ".$part" "$TMP/got.json")" \
        "$(jq -S -c ".$part" "$TMP/want.json")"
done
equal "$name stats: PING handled = ground truth pings" \
    "$(jq '.messages[] | select(.name == "PING") | .handled' "$TMP/$name.stats")" "$(truth "$TMP/$name.out" ping)"
equal "$name stats: no row for steps without a message" \
    "$(jq '[.messages[] | select(.name_id == 0)] | length' "$TMP/$name.stats")" 0

# Perfetto: each send's flow passes its recv and the reader step that handled it (one begins
# before the other; the flow ends at the later)
"$DECODE" -f perfetto -o "$TMP/$name.pftrace" "$TMP/$name.trace"
pftsv "$TMP/$name.pftrace" | awk '
    function flow() { return $6 != "-" ? $6 : $7 }
    $1 == "N" { n = $0; sub(/^N [^ ]+ "/, "", n); kind[$2] = substr(n, 1, 5) }
    $1 == "E" && $3 == "TYPE_INSTANT" && kind[$5] == "send " { sent[$8] = $6 }
    $1 == "E" && $3 == "TYPE_INSTANT" && kind[$5] == "recv " { recv[$8] = flow() }
    $1 == "E" && $3 == "TYPE_SLICE_BEGIN" && flow() != "-" { step[$8] = flow() }
    END {
        for (m in recv) r += recv[m] != "-" && recv[m] == sent[m]
        for (m in step) s += step[m] == sent[m]
        print r + 0, s + 0
    }' >"$TMP/$name.flows"
equal "$name perfetto: every recv and every reader step is on its send's flow" \
    "$(cat "$TMP/$name.flows")" "$(kind_count "$j" recv) $(truth "$TMP/$name.out" reader_steps)"

# Steps on actor tracks are named by the message they handled (a reader step carries only
# the id), and a step that handled none is "(unnamed)", the name every view gives to no name
pftsv "$TMP/$name.pftrace" >"$TMP/$name.pf.tsv"
equal "$name perfetto: reader steps named by their message" \
    "$(awk '$1 == "N" && $3 == "\"PING\"" { iid = $2 }
        $1 == "E" && $3 == "TYPE_SLICE_BEGIN" && $5 == iid' "$TMP/$name.pf.tsv" | wc -l)" \
    "$(truth "$TMP/$name.out" ping)"
check "$name perfetto: a step without a message is named (unnamed)" \
    grep -q '^N [0-9]* "(unnamed)"$' "$TMP/$name.pf.tsv"
