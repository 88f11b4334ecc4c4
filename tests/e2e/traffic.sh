#!/bin/sh
# The views on real CZMQ traffic (tests/targets/czmq/traffic.c, pingpong.c): a message received
# outside a zloop reader ends at its recv in every view; a PUB's message to two subscribers is one
# send and two deliveries, a flow to each, counted as deliveries; a socket destroyed without an
# unbind ends its endpoint, so the sockets bound and connected after it match their messages.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/proto/pftsv.sh"
P="$B/tests/czmq"

jqe() { jq "$@" >/dev/null; }

# flow_records CHROME PH: how many flow records of that phase
flow_records() {
    jq --arg ph "$2" '[.traceEvents[] | select(.cat == "flow" and .ph == $ph)] | length' "$1"
}

# ---- every message reaches an end: pipes, received outside zloop (zstr) and in a reader
for api in zstr zloop; do
    run_both "$api" "$P/pingpong" "$api" 500 1
    j="$TMP/$api.jsonl"
    recvs=$(kind_count "$j" recv)
    "$DECODE" -f chrome -o "$TMP/$api.json" "$TMP/$api.trace"
    equal "$api chrome: a flow starts at each send" "$(flow_records "$TMP/$api.json" s)" \
        "$(kind_count "$j" send)"
    equal "$api chrome: a flow ends at each recv" "$(flow_records "$TMP/$api.json" f)" "$recvs"
    "$DECODE" -f perfetto -o "$TMP/$api.pftrace" "$TMP/$api.trace"
    equal "$api perfetto: a flow ends at each recv" \
        "$(pftsv "$TMP/$api.pftrace" | awk '$1 == "E" && $7 != "-"' | wc -l)" "$recvs"
    "$DECODE" -f stats --json -o "$TMP/$api.stats" "$TMP/$api.trace"
    check "$api stats: every message name has send -> recv latency for each recv" jqe -e \
        '.messages | length > 0 and all(.recv_latency_ns.count == .received)' "$TMP/$api.stats"
    check "$api stats: no recv without a send" jqe -e '.matching.recvs_without_send == 0' \
        "$TMP/$api.stats"
done
check "zloop stats: reader steps have send -> step latency, apart from send -> recv" jqe -e \
    '[.messages[] | select(.name == "PING")] | length == 1
     and all(.latency_ns.count == .handled and .handled > 0 and .recv_latency_ns.count == .received)' \
    "$TMP/zloop.stats"
check "zstr stats: no step handles a message, so no send -> step latency" jqe -e \
    'all(.messages[]; .handled == 0 and .latency_ns.count == 0)' "$TMP/zstr.stats"

# ---- fan-out: PUB to two subscribers
run_both fanout "$P/traffic" fanout 300
j="$TMP/fanout.jsonl" o="$TMP/fanout.out"
news=$(truth "$o" news)
equal "fanout: NEWS sends = ground truth" "$(jq -c 'select(.event == "send" and .msg_name == "NEWS")' "$j" | wc -l)" "$news"
equal "fanout: NEWS recvs = both subscribers' counts" \
    "$(jq -c 'select(.event == "recv" and .msg_name != null and (.msg_name == "NEWS" or .msg_name == "END") and .socket)' "$j" | wc -l)" \
    "$(($(truth "$o" 'heard[0]') + $(truth "$o" 'heard[1]')))"
"$DECODE" -f stats --json -o "$TMP/fanout.stats" "$TMP/fanout.trace"
check "fanout stats: NEWS sent once, received (delivered) twice, each with its latency" jqe -e \
    --argjson n "$news" '[.messages[] | select(.name == "NEWS")][0]
     | .sent == $n and .received == 2 * $n and .recv_latency_ns.count == 2 * $n' "$TMP/fanout.stats"
check "fanout stats: every recv has its send" jqe -e \
    '.matching.recvs_without_send == 0 and .matching.unhandled_sends == 0' "$TMP/fanout.stats"
jq -c 'select(.event == "recv") | .actor' "$j" | sort | uniq -c | awk '{ print $2, $1 }' >"$TMP/fanout.want"
jq -r '.actors[] | select(.received > 0) | "\(.actor) \(.received)"' "$TMP/fanout.stats" | sort >"$TMP/fanout.got"
check "fanout stats: each actor's received = the messages delivered to it" \
    cmp -s "$TMP/fanout.got" "$(sort "$TMP/fanout.want" >"$TMP/fanout.want.s"; echo "$TMP/fanout.want.s")"
"$DECODE" -f chrome -o "$TMP/fanout.json" "$TMP/fanout.trace"
equal "fanout chrome: a flow starts for each delivery (two per NEWS)" \
    "$(flow_records "$TMP/fanout.json" s)" "$(kind_count "$j" recv)"
equal "fanout chrome: a flow ends at each recv" "$(flow_records "$TMP/fanout.json" f)" \
    "$(kind_count "$j" recv)"
check "fanout chrome: each flow runs from a send to a recv of its message" jqe -e '
    [.traceEvents[] | select(.cat == "flow")] | group_by(.id)
    | all(length == 2 and (map(.ph) | sort) == ["f", "s"])' "$TMP/fanout.json"
"$DECODE" -f perfetto -o "$TMP/fanout.pftrace" "$TMP/fanout.trace"
pftsv "$TMP/fanout.pftrace" >"$TMP/fanout.tsv"
equal "fanout perfetto: flows ended = recvs" "$(awk '$1 == "E" && $7 != "-"' "$TMP/fanout.tsv" | wc -l)" \
    "$(kind_count "$j" recv)"
equal "fanout perfetto: flow ids started (two on each NEWS) = recvs" \
    "$(protoc --decode=perfetto.protos.Trace -I "$TOP/tests/e2e/proto" \
        "$TOP/tests/e2e/proto/perfetto_min.proto" \
        <"$TMP/fanout.pftrace" | grep -c ' flow_ids:')" "$(kind_count "$j" recv)"
"$DECODE" -f dot -o "$TMP/fanout.dot" "$TMP/fanout.trace"
equal "fanout dot: main's edge to each subscriber carries every NEWS" \
    "$(grep -c "^  \"0:1\" -> \"0:[0-9]*\" .*label=\"NEWS $news\\\\n" "$TMP/fanout.dot")" 2

# ---- a socket destroyed without an unbind, then its endpoint bound again by a new socket
for ep in inproc://jobs 'tcp://127.0.0.1:*'; do
    name=rebind_$(echo "$ep" | cut -d: -f1)
    run_both "$name" "$P/traffic" rebind "$ep" 200
    j="$TMP/$name.jsonl"
    equal "$name: zmq_close events = sockets destroyed" "$(kind_count "$j" zmq_close)" 4
    equal "$name: JOB sends = ground truth" \
        "$(jq -c 'select(.event == "send" and .msg_name == "JOB")' "$j" | wc -l)" \
        "$(truth "$TMP/$name.out" sent)"
    equal "$name: every JOB is matched: one send and one recv per id, both rounds" \
        "$(jq -s '[.[] | select(.msg_name == "JOB" and .msg != null and .actor != null
                             and .sender != null)] | group_by(.msg)
                  | map(select(length == 2 and (map(.event) | sort) == ["recv", "send"])) | length' "$j")" \
        "$(truth "$TMP/$name.out" received)"
done
