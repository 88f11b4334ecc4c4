#!/bin/sh
# Traces of several hosts on one timeline (docs/DECODER.md, "Several hosts"). Two processes talk
# over tcp on 127.0.0.1 (zmq.sh's programs), each traced into its own file. The server either
# runs as it is (one host: both files keep CLOCK_MONOTONIC, exactly as each decodes alone) or
# poses as another host through the test copy of the library (ACTORTRACE_TEST_HOST: another
# boot id, MONOTONIC 1000 s ahead, REALTIME 3 s ahead): tracedecode places it by its REALTIME
# samples, finds its recvs 3 s before their sends, estimates the offset from the matched
# messages, and puts every recv after its send.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/czmq/sockets"
N=300
SHIFT=3000000000 # the other host's REALTIME error, ns
SLACK=1000000    # what sampling REALTIME and MONOTONIC one after the other may add, ns

# pair NAME [TEST_HOST]: a server (posing as TEST_HOST when given) and a client, traced
pair() {
    rm -f "$TMP/endpoint"
    ACTORTRACE_TEST_HOST=${2:-} traced "$TMP/$1.server" "$P" server 'tcp://127.0.0.1:*' \
        "$TMP/endpoint" "$N" >"$TMP/$1.server.out" 2>&1 &
    server=$!
    for _ in $(seq 100); do [ -s "$TMP/endpoint" ] && break; sleep 0.1; done
    traced "$TMP/$1.client" "$P" client "$(cat "$TMP/endpoint")" "$N" >"$TMP/$1.client.out" 2>&1
    check "$1: client runs traced" [ $? -eq 0 ]
    wait "$server"
    check "$1: server runs traced" [ $? -eq 0 ]
    "$ASAN_DECODE" -o "$TMP/$1.jsonl" "$TMP/$1.client" "$TMP/$1.server" 2>"$TMP/$1.err"
    check "$1: the two traces decode together cleanly (ASan)" [ $? -eq 0 ]
}

jqe() { # jqe ARGS...: jq -n -e, its output dropped: a check of its exit status
    jq -n -e "$@" >/dev/null
}

# in_order NAME: every socket message is one send and one recv, the recv later, in time and
# in the output
in_order() {
    j="$TMP/$1.jsonl"
    equal "$1: socket messages matched, send and recv" \
        "$(jq -c 'select(.socket and .msg and (.event == "send" or .event == "recv"))' "$j" |
            wc -l)" $((4 * N))
    check "$1: every recv follows its send, in time and in the output" \
        jqe '[inputs | select(.socket and (.event == "send" or .event == "recv"))]
        | to_entries | group_by(.value.msg)
        | all(length == 2 and .[0].value.event == "send" and .[1].value.event == "recv"
              and .[1].value.ts_ns > .[0].value.ts_ns)' "$j"
}

# ---- one host: MONOTONIC, exactly as each file decodes alone ---------------------------------
pair same
in_order same
check "same: nothing said about hosts" [ ! -s "$TMP/same.err" ]
check "same: no hosts in the summary" jqe '[inputs | select(.summary)] | .[0].hosts == null' \
    "$TMP/same.jsonl"
same_times() { # same_times FILE: its events, alone and in the merge, have the same times
    "$DECODE" -o "$TMP/alone.jsonl" "$TMP/same.$1"
    jq -c 'select(.summary | not) | [.tid, .ts_ns, .event]' "$TMP/alone.jsonl" >"$TMP/alone"
    tids=$(jq -s -c 'map({key: (.[0] | tostring), value: true}) | from_entries' "$TMP/alone")
    jq -c --argjson t "$tids" 'select($t[.tid | tostring]) | [.tid, .ts_ns, .event]' \
        "$TMP/same.jsonl" >"$TMP/merged"
    [ -s "$TMP/alone" ] && cmp -s "$TMP/alone" "$TMP/merged"
}
for f in client server; do
    check "same: the $f's events keep the times they have alone" same_times "$f"
done

# ---- another host, its REALTIME 3 s ahead: placed, then corrected ----------------------------
pair hosts "other-boot,1000000000000,$SHIFT"
in_order hosts
j="$TMP/hosts.jsonl"
check "hosts: two hosts reported" grep -q "the traces come from 2 hosts" "$TMP/hosts.err"
check "hosts: the report says what the samples cannot show" \
    grep -q "does not show in the samples" "$TMP/hosts.err"
check "hosts: the summary lists both, the first file's unmoved" \
    jqe '[inputs | select(.summary)][0].hosts | length == 2 and .[0].realtime_shift_ns == 0
        and .[0].offset_ns == 0 and .[1].boot_id == "other-boot" and .[1].files == 1' "$j"
check "hosts: REALTIME placement moves the other host by its MONOTONIC difference, 997 s" \
    jqe --argjson s "$SLACK" '[inputs | select(.summary)][0].hosts[1].realtime_shift_ns
        | . + 997000000000 | fabs <= $s' "$j"
check "hosts: every message counted, both ways: requests in, replies out" \
    jqe --argjson in "$(truth "$TMP/hosts.client.out" req)" \
        --argjson out "$(truth "$TMP/hosts.server.out" rep)" '[inputs | select(.summary)][0].hosts[1]
        | .messages_in == $in and .messages_out == $out and $in > 0' "$j"
check "hosts: the bounds hold the 3 s the server's REALTIME was ahead; the estimate is within" \
    jqe --argjson s "$SLACK" --argjson shift "$SHIFT" '[inputs | select(.summary)][0].hosts[1]
        | .offset_min_ns <= -$shift + $s and .offset_max_ns >= -$shift - $s
          and .offset_min_ns <= .offset_ns and .offset_ns <= .offset_max_ns
          and (.offset_ns + $shift | fabs) <= .offset_max_ns - .offset_min_ns + $s' "$j"
check "hosts: the report says the offset and its bounds on stderr" \
    grep -q "messages in from the other hosts.*; moved by -[0-9]* ns" "$TMP/hosts.err"
"$DECODE" -f stats --json -o "$TMP/stats.json" "$TMP/hosts.client" "$TMP/hosts.server" 2>/dev/null
check "hosts: stats --json carries the same hosts" \
    jqe --slurpfile s "$TMP/stats.json" '[inputs | select(.summary)][0].hosts == $s[0].hosts' "$j"

# ---- another host whose REALTIME is right: placed by it, not corrected -----------------------
# (MONOTONIC ahead, not behind: a machine up for less than the shift would wrap around)
pair synced "synced-boot,500000000000,0"
in_order synced
check "synced: in order after the REALTIME placement: not moved, and 0 within the bounds" \
    jqe '[inputs | select(.summary)][0].hosts[1]
        | .offset_ns == 0 and .offset_min_ns <= 0 and .offset_max_ns >= 0' "$TMP/synced.jsonl"
check "synced: the report says it is in order already" \
    grep -q "in order already, moved by 0 ns" "$TMP/synced.err"
