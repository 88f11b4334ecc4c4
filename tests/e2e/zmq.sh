#!/bin/sh
# Messages on ordinary ZeroMQ sockets (not actor pipes), traced through shim/czmq.c and matched
# by tracedecode (decoder/analysis/sockets.c): between CZMQ actors over inproc (PUSH/PULL, PAIR,
# DEALER/ROUTER, REQ/ROUTER, PUB/SUB with two subscribers), and between two processes, traced
# into two files and decoded together. Every send must name its receiver and share its message
# id with its recv (each subscriber's, for PUB/SUB), between the actors that bound and
# connected the endpoint, in the counts the programs report. Over tcp (a bound address, and a
# wildcard bind reached through localhost) and ipc, two traces decoded together, whose views
# draw each message across the processes. A program that disconnects, reconnects, unbinds and
# rebinds: each message pairs with the peer its socket was joined to when it was sent.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/proto/pftsv.sh"
P="$B/tests/czmq/sockets"
N=500

jqe() { # jqe ARGS...: jq -n -e, its output dropped: a check of its exit status
    jq -n -e "$@" >/dev/null
}

named() { # named JSONL EVENT MSG_NAME: socket events of that kind and name
    jq -c --arg e "$2" --arg n "$3" 'select(.socket and .event == $e and .msg_name == $n)' "$1" |
        wc -l
}

# ---- inproc, between actors -------------------------------------------------------------
limit "$P" inproc "$N" >"$TMP/plain.out" 2>&1
check "inproc: runs untraced" [ $? -eq 0 ]
traced "$TMP/in.trace" "$P" inproc "$N" >"$TMP/in.out" 2>"$TMP/in.err"
check "inproc: runs traced" [ $? -eq 0 ]
check "inproc: tracer printed nothing on stderr" [ ! -s "$TMP/in.err" ]
check "inproc: output unchanged by tracing" cmp -s "$TMP/plain.out" "$TMP/in.out"
"$ASAN_DECODE" -o "$TMP/in.jsonl" "$TMP/in.trace"
check "inproc: decodes cleanly (ASan)" [ $? -eq 0 ]
j="$TMP/in.jsonl"
o="$TMP/in.out"

equal "inproc: JOB and TASK sends = pushed" \
    $(($(named "$j" send JOB) + $(named "$j" send TASK))) "$(truth "$o" push)"
equal "inproc: JOB and TASK recvs = pulled" \
    $(($(named "$j" recv JOB) + $(named "$j" recv TASK))) "$(truth "$o" pull)"
for pair in PING:ping PONG:pong REQ:req REP:rep NEWS:news END:end; do
    equal "inproc: ${pair%%:*} sends = ground truth" "$(named "$j" send "${pair%%:*}")" \
        "$(truth "$o" "${pair#*:}")"
done
for pair in PING:ping PONG:pong REQ:req REP:rep; do
    equal "inproc: ${pair%%:*} recvs = ground truth" "$(named "$j" recv "${pair%%:*}")" \
        "$(truth "$o" "${pair#*:}")"
done
equal "inproc: NEWS recvs = what both subscribers heard" "$(named "$j" recv NEWS)" \
    "$(jq -r '.ground_truth.heard | add' "$o" | tail -n 1)"
equal "inproc: END recvs, one per subscriber" "$(named "$j" recv END)" 2
equal "inproc: binds" "$(kind_count "$j" zmq_bind)" 6
equal "inproc: connects" "$(kind_count "$j" zmq_connect)" 6

equal "inproc: LOST sends = failed sends" "$(named "$j" send LOST)" "$(truth "$o" failed)"
equal "inproc: send_failed events = failed sends" "$(named "$j" send_failed LOST)" \
    "$(truth "$o" failed)"
check "inproc: a failed send has no receiver and no msg; its send_failed names the sender" \
    jqe '[inputs | select(.msg_name == "LOST")]
        | all(.actor == null and .msg == null and .sender == 1 and .peer == null)' "$j"

equal "inproc: OUT sends on a pipe of no actor = ground truth" "$(kind_count "$j" zmq_pipe)/$(
    jq -c 'select(.event == "send" and .msg_name == "OUT")' "$j" | wc -l)" "1/$(truth "$o" out)"
check "inproc: OUT, sent before main used its end, names main as receiver on send and recv" \
    jqe '[inputs | select(.msg_name == "OUT")] | length > 0 and all(.actor == 1 and .msg != null)
        and (group_by(.msg) | all(length == 2))' "$j"

check "inproc: every socket send names its receiver, every recv its sender, both a msg" \
    jqe '[inputs | select(.socket and .msg_name != "LOST" and (.event == "send" or .event == "recv"))]
        | all(.msg != null and .msg < 4294967296 and .sender != null and .actor != null)' "$j"

# One send per id; its recvs (two for PUB/SUB, else one) later, with its name and sender; the
# send's receiver is its recv's actor (one of them for PUB/SUB).
check "inproc: each id is one send and its recvs, later, between the same actors" \
    jqe '[inputs | select(.socket and .msg_name != "LOST" and (.event == "send" or .event == "recv"))]
        | group_by(.msg) | all((map(select(.event == "send")) | length) == 1
              and (.[0].msg_name as $n | length == (if $n == "NEWS" or $n == "END" then 3 else 2 end))
              and (map(select(.event == "send"))[0] as $s | map(select(.event == "recv"))
                   | all(.ts_ns >= $s.ts_ns and .sender == $s.sender and .msg_name == $s.msg_name)
                     and any(.actor == $s.actor)))' "$j"

# The receiver is the actor that bound or connected the other end of the endpoint.
check "inproc: each message goes from the actor at one end of its endpoint to the other's" \
    jqe '[inputs] | (map(select(.event == "zmq_bind" or .event == "zmq_connect"))
          | map({key: (.socket | tostring), value: {actor, ep: .msg_name}}) | from_entries) as $s
        | map(select(.socket and .event == "recv"))
        | all(. as $r | $s[.socket | tostring] as $me | .actor == $me.actor
              and any($s[]; .ep == $me.ep and .actor == $r.sender))' "$j"

check "inproc: PUB/SUB fan-out: every NEWS send reaches both subscribers" \
    jqe '[inputs | select(.socket and .msg_name == "NEWS")] | group_by(.msg)
        | all(map(select(.event == "recv") | .actor) | unique | length == 2)' "$j"

# Flows: each socket message's flow reaches its recv (a fan-out send's: one flow to each).
"$DECODE" -f chrome -o "$TMP/in.json" "$TMP/in.trace"
flows=$(jq '[.traceEvents[] | select(.cat == "flow" and (.ph == "t" or .ph == "f"))] | length' \
    "$TMP/in.json")
sends=$(jq -c 'select(.socket and .event == "send" and .msg)' "$j" | wc -l)
check "inproc: flows drawn to the recvs of all $sends socket messages ($flows flows)" \
    [ "$flows" -ge "$sends" ]

# dot: the send no one received goes to a node of its socket's endpoint; the node "outside any
# actor" is only ever a sender
"$ASAN_DECODE" -f dot -o "$TMP/in.dot" "$TMP/in.trace"
check "inproc dot: the failed send goes from main to its endpoint's node" \
    grep -q '^  "0:1" -> "0:endpoint:[0-9]*" \[penwidth=1, label="LOST 1\\n"\];$' "$TMP/in.dot"
check "inproc dot: the endpoint's node is named by the endpoint, as a receiver unknown" \
    grep -q '^    "0:endpoint:[0-9]*" \[label="receiver unknown\\ninproc://nobody", ' "$TMP/in.dot"
check "inproc dot: no edge ends at the node outside any actor" \
    sh -c "! grep -q -- '-> \"0:0\"' '$TMP/in.dot'"
equal "inproc dot: socket messages on edges between actors = their deliveries (matched recvs)" \
    "$(sed -n 's/^  "0:[1-9][0-9]*" -> "0:[1-9][0-9]*" .*label="\(.*\)"\];$/\1/p' "$TMP/in.dot" |
        tr -s '\\n' '\n' | awk '$1 ~ /^(JOB|TASK|PING|PONG|REQ|REP|NEWS|END)$/ { n += $2 } END { print n + 0 }')" \
    "$(jq -c 'select(.socket and .event == "recv" and .sender and .msg)' "$j" | wc -l)"

# ---- two processes traced into two files ------------------------------------------------
# remote_views NAME JSONL: the views of the two traces. Every matched message (a msg id on its
# send and its recv) has exactly one flow, from its send in the sender's process to its recv in
# the receiver's (Chrome: an "s" and an "f" record with the pid and time of the two events;
# Perfetto: a flow id on the two events, at their times, with the message's id); stats name
# each row's process and count each registered kind by its name (each process numbers its
# own); dot draws each message from its sender's cluster to its receiver's.
remote_views() {
    name=$1 j=$2 traces="$TMP/client.trace $TMP/server.trace"
    jq -r 'select(.socket and .msg and (.event == "send" or .event == "recv"))
        | "\(.msg) \(.event) \(.pid) \(.ts_ns)"' "$j" | sort -k1,1n -k2,2r |
        awk '{ t = sprintf("%.0f.%03d", ($4 - $4 % 1000) / 1000, $4 % 1000) }
             $2 == "send" { line = $3 " " t } $2 == "recv" { print line, $3, t }' |
        sort >"$TMP/$name.want.flows"
    "$ASAN_DECODE" -f chrome -o "$TMP/$name.chrome" $traces
    sed -n 's/^{"ph":"\([stf]\)","pid":\([0-9]*\),"tid":[0-9]*,"ts":\([0-9.]*\),"cat":"flow",.*"id":\([0-9]*\).*/\4 \1 \2 \3/p' \
        "$TMP/$name.chrome" | sort -k1,1n -k2,2r |
        awk '$1 != id { if (id != "") print out, n; id = $1; out = ""; n = 0 }
             { out = out (out == "" ? "" : " ") $3 " " $4; n++ } END { if (id != "") print out, n }' |
        awk '$5 == 2 { print $1, $2, $3, $4 } $5 != 2 { print "flow of", $5, "records" }' |
        sort >"$TMP/$name.chrome.flows"
    equal "$name chrome: each of the $(wc -l <"$TMP/$name.want.flows") messages has one flow, from its send's process to its recv's" \
        "$(comm -3 "$TMP/$name.want.flows" "$TMP/$name.chrome.flows" | wc -l)" 0
    check "$name chrome: the flows cross processes" \
        awk 'NF != 4 || $1 == $3 { bad = 1 } END { exit bad || NR == 0 }' "$TMP/$name.chrome.flows"
    "$DECODE" -f perfetto -o "$TMP/$name.pftrace" $traces
    pftsv "$TMP/$name.pftrace" |
        awk '$1 == "E" && ($6 != "-" || $7 != "-") { print ($6 != "-" ? $6 : $7), $2, $8 }' |
        sort -k1,1n -k2,2n | awk '$1 != id { if (id != "") print out, n; id = $1; out = m = $3; n = 0 }
            { out = out " " $2 ($3 == m ? "" : " other-msg"); n++ }
            END { if (id != "") print out, n }' | sort >"$TMP/$name.pf.flows"
    jq -r 'select(.socket and .msg and (.event == "send" or .event == "recv")) | "\(.msg) \(.ts_ns)"' \
        "$j" | sort -k1,1n -k2,2n | awk '$1 != id { if (id != "") print out, 2; id = $1; out = $1 }
            { out = out " " $2 } END { if (id != "") print out, 2 }' | sort >"$TMP/$name.pf.want"
    equal "$name perfetto: each message has one flow, on its send and its recv, with its id" \
        "$(comm -3 "$TMP/$name.pf.want" "$TMP/$name.pf.flows" | wc -l)" 0
    "$ASAN_DECODE" -f dot -o "$TMP/$name.dot" $traces
    equal "$name dot: every message an edge from its sender's cluster to its receiver's" \
        "$(sed -n 's/^  "\([0-9]*\):[1-9][0-9]*" -> "\([0-9]*\):[1-9][0-9]*" .*label="[A-Z]* \([0-9]*\)\\n"\];$/\1 \2 \3/p' \
            "$TMP/$name.dot" | awk '$1 != $2 { n += $3 } END { print n + 0, NR }')" \
        "$(wc -l <"$TMP/$name.want.flows") 2"
    "$ASAN_DECODE" -f stats --json -o "$TMP/$name.stats" $traces
    jq -r '.messages[] | "\(.pid) \(.name) \(.sent) \(.received)"' "$TMP/$name.stats" | sort >"$TMP/$name.rows"
    jq -r 'select(.socket and (.event == "send" or .event == "recv")) | "\(.pid) \(.msg_name) \(.event)"' "$j" |
        sort | uniq -c | awk '{ n[$2 " " $3] = n[$2 " " $3] + 0; n[$2 " " $3 " " $4] = $1; k[$2 " " $3] = 1 }
            END { for (x in k) print x, n[x " send"] + 0, n[x " recv"] + 0 }' | sort >"$TMP/$name.rows.want"
    check "$name stats --json: each message name's row has its process's pid and counts" \
        cmp -s "$TMP/$name.rows" "$TMP/$name.rows.want"
    equal "$name stats --json: kinds each process registered, counted by name" \
        "$(jq -c '.kinds | [.zmq_bind, .zmq_connect]' "$TMP/$name.stats")" "[1,1]"
    "$DECODE" -f stats -o "$TMP/$name.stats.txt" $traces
    sed -n '/^Messages by name/,/^$/p' "$TMP/$name.stats.txt" |
        awk '$2 == "[pid" { sub(/]/, "", $3); print $3, $1, $4, $5 }' | sort >"$TMP/$name.rows.txt"
    check "$name stats: each message name's row says its process's pid" \
        cmp -s "$TMP/$name.rows.txt" "$TMP/$name.rows.want"
}

# remote NAME BIND [HOST]: a server bound to BIND, a client connected to the endpoint it got
# (its wildcard address replaced by HOST)
remote() {
    name=$1
    rm -f "$TMP/endpoint"
    traced "$TMP/server.trace" "$P" server "$2" "$TMP/endpoint" "$N" >"$TMP/server.out" 2>&1 &
    server=$!
    for _ in $(seq 100); do [ -s "$TMP/endpoint" ] && break; sleep 0.1; done
    endpoint=$(sed "s/0\.0\.0\.0/${3:-0.0.0.0}/" "$TMP/endpoint")
    traced "$TMP/client.trace" "$P" client "$endpoint" "$N" >"$TMP/client.out" 2>&1
    check "$name: client runs traced" [ $? -eq 0 ]
    wait "$server"
    check "$name: server runs traced" [ $? -eq 0 ]
    "$ASAN_DECODE" -o "$TMP/$name.jsonl" "$TMP/client.trace" "$TMP/server.trace"
    check "$name: the two traces decode together cleanly (ASan)" [ $? -eq 0 ]
    j="$TMP/$name.jsonl"
    remote_views "$name" "$j"
    rm -f "$TMP/client.trace" "$TMP/server.trace"
    cpid=$(jq -r 'select(.event == "zmq_connect") | .pid' "$j")
    spid=$(jq -r 'select(.event == "zmq_bind") | .pid' "$j")
    check "$name: the client connected and the server bound, in two processes" \
        [ -n "$cpid" ] && [ -n "$spid" ] && [ "$cpid" != "$spid" ]
    equal "$name: REQ sends = ground truth" "$(named "$j" send REQ)" "$(truth "$TMP/client.out" req)"
    equal "$name: REQ recvs = ground truth" "$(named "$j" recv REQ)" "$(truth "$TMP/client.out" req)"
    equal "$name: REP sends = ground truth" "$(named "$j" send REP)" "$(truth "$TMP/server.out" rep)"
    equal "$name: REP recvs = ground truth" "$(named "$j" recv REP)" "$(truth "$TMP/server.out" rep)"
    check "$name: every message crosses the processes: sent in one, received in the other" \
        jqe --argjson c "${cpid:-0}" --argjson s "${spid:-0}" '[inputs | select(.socket and (.event == "send" or .event == "recv"))]
        | all(if .event == "send" then .actor_pid == (if .pid == $c then $s else $c end) and .actor != null
              else .sender_pid == (if .pid == $c then $s else $c end) and .sender != null end)' "$j"
    check "$name: each id is one send and one recv, in different processes, latency positive" \
        jqe '[inputs | select(.socket and (.event == "send" or .event == "recv"))] | group_by(.msg)
        | all(length == 2 and (sort_by(.event) | .[0].event == "recv" and .[1].event == "send"
              and .[0].pid != .[1].pid and .[0].ts_ns > .[1].ts_ns
              and .[0].sender == .[1].sender and .[0].actor == .[1].actor))' "$j"
    # the other file's actor keeps its name there (the main thread of each process: "main")
    check "$name: a message matched across files names the other end as its file does" \
        jqe '[inputs] | (map(select(.actor_name) | {key: "\(.pid) \(.actor)", value: .actor_name})
                         | from_entries) as $names
        | map(select(.socket and (.event == "send" or .event == "recv")))
        | length > 0 and all(if .event == "send"
              then .actor_name != null and .actor_name == $names["\(.actor_pid) \(.actor)"]
              else .sender_name != null and .sender_name == $names["\(.sender_pid) \(.sender)"] end)' "$j"
}

remote tcp 'tcp://127.0.0.1:*'
remote "tcp wildcard" 'tcp://*:*' localhost
remote ipc "ipc://$TMP/ipc-socket"

# ---- unbind and disconnect end a join ---------------------------------------------------
# One fingerprint ("JOB") in five phases (tests/targets/czmq/sockets.c, rebind): sockets 2 -> 1;
# 2 disconnects and connects to 3; 4 connects to 1 (1 receives 4's after 2's went to 3); 6 -> 5
# over ipc; 5 unbinds, 7 binds the same path, 6 reconnects by itself. Each message must pair
# with a recv on the socket its sender was joined to when it sent it.
traced "$TMP/rebind.trace" "$P" rebind "$TMP" "$N" >"$TMP/rebind.out" 2>&1
check "rebind: runs traced" [ $? -eq 0 ]
equal "rebind: every JOB sent and received" \
    "$(jq -c '.ground_truth | [.sent, .received] | flatten | unique' "$TMP/rebind.out")" "[$N]"
"$ASAN_DECODE" -o "$TMP/rebind.jsonl" "$TMP/rebind.trace"
check "rebind: decodes cleanly (ASan)" [ $? -eq 0 ]
equal "rebind: endpoints, in order, then each socket's close: event socket endpoint" \
    "$(jq -r 'select(.socket and (.event | startswith("zmq_"))) | "\(.event) \(.socket) \(.msg_name)"' \
        "$TMP/rebind.jsonl" | sed "s|$TMP/||" | tr '\n' ',')" \
    "zmq_bind 1 inproc://a,zmq_connect 2 inproc://a,zmq_disconnect 2 inproc://a,zmq_bind 3 inproc://b,zmq_connect 2 inproc://b,zmq_connect 4 inproc://a,zmq_bind 5 ipc://c,zmq_connect 6 ipc://c,zmq_unbind 5 ipc://c,zmq_bind 7 ipc://c,zmq_close 1 null,zmq_close 2 null,zmq_close 3 null,zmq_close 4 null,zmq_close 5 null,zmq_close 6 null,zmq_close 7 null,"
equal "rebind: each JOB pairs a send with a recv on the socket joined to it then (count send recv)" \
    "$(jq -s -r '[.[] | select(.socket and .msg and .msg_name == "JOB")] | group_by(.msg)[]
        | "\(map(select(.event == "send"))[0].socket) \(map(select(.event == "recv"))[0].socket) \(length)"' \
        "$TMP/rebind.jsonl" | sort | uniq -c | awk '{ print $1, $2, $3, $4 }' | tr '\n' ',')" \
    "$N 2 1 2,$N 2 3 2,$N 4 1 2,$N 6 5 2,$N 6 7 2,"
