#!/bin/sh
# CZMQ programs traced through shim/czmq.c. A ping-pong over each API family must leave in the
# trace exactly the messages the program says it sent, each sent once and received once, in
# order, named, and between the right actors; CZMQ's own actor classes (zproxy, zmonitor) must
# run traced to the same output, their actors, sends and names in the trace.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/czmq"
ROUNDS=2000

named() { # named JSONL EVENT MSG_NAME: how many EVENT events carry that message name
    jq -c --arg e "$2" --arg n "$3" 'select(.event == $e and .msg_name == $n)' "$1" | wc -l
}

pingpong_case() { # pingpong_case NAME API [BURST]
    name=$1
    run_both "$name" "$P/pingpong" "$2" "$ROUNDS" "${3:-1}"
    j="$TMP/$name.jsonl"
    out="$TMP/$name.out"

    total=0
    for pair in PING:ping PONG:pong '$TERM:term' '$SIGNAL:signal'; do
        msg=${pair%%:*}
        want=$(truth "$out" "${pair#*:}")
        total=$((total + want))
        equal "$name: $msg sends = ground truth" "$(named "$j" send "$msg")" "$want"
        equal "$name: $msg receives = ground truth" "$(named "$j" recv "$msg")" "$want"
    done
    equal "$name: no other send" "$(kind_count "$j" send)" "$total"
    equal "$name: no other recv" "$(kind_count "$j" recv)" "$total"

    # one pipe: each message id is sent once and received once, later, by the same actors
    check "$name: every message sent once, then received once, between the same actors" \
        jq -n -e '[inputs | select(.event == "send" or .event == "recv")]
        | all(.msg != null) and (group_by(.msg) | all(
            length == 2 and (map(.event) | sort) == ["recv", "send"]
            and (sort_by(.event) | .[0].ts_ns >= .[1].ts_ns
                 and .[0].actor == .[1].actor and .[0].sender == .[1].sender
                 and .[0].msg_name == .[1].msg_name)))' "$j"

    child=$(jq -r 'select(.event == "spawn") | .actor' "$j")
    equal "$name: spawns = actors" "$(kind_count "$j" spawn)" "$(truth "$out" actors)"
    check "$name: the actor is named after its task, spawned by main (actor 1)" jq -n -e \
        '[inputs | select(.event == "spawn")]
         | all(.actor_name == "pong_actor" and .peer == 1 and .peer_name == "main")' "$j"
    check "$name: PING goes from main to the actor, PONG back" jq -n -e --argjson c "$child" \
        '[inputs | select(.msg_name == "PING" or .msg_name == "PONG")]
         | all(if .msg_name == "PING" then .actor == $c and .sender == 1
               else .actor == 1 and .sender == $c end)' "$j"

    equal "$name: park events = blocking receives" "$(kind_count "$j" park)" "$(truth "$out" park)"
    # none failed; those that took a later frame of a message took no new one
    equal "$name: unpark events = receives of later frames" "$(kind_count "$j" unpark)" \
        "$(truth "$out" later_frames)"
    check "$name: on each thread every park is followed by a recv or an unpark" jq -n -e '
        [inputs | select(.event == "park" or .event == "unpark" or .event == "recv")]
        | group_by(.tid)
        | all(. as $e | [range(length)]
              | all($e[.].event != "park" or ($e[. + 1].event == "recv"
                                               or $e[. + 1].event == "unpark")))' "$j"
    steps=$(truth "$out" steps)
    equal "$name: step_begin events = ground truth steps" "$(kind_count "$j" step_begin)" "$steps"
    equal "$name: step_end events = ground truth steps" "$(kind_count "$j" step_end)" "$steps"
    equal "$name: exits = actors" "$(kind_count "$j" exit)" "$(truth "$out" actors)"
}

# PING and PONG sends, and their receives, alternate in time, starting with PING
alternate() { # alternate NAME
    j="$TMP/$1.jsonl"
    for kind in send recv; do
        check "$1: PING/PONG ${kind}s alternate" jq -n -e --arg k "$kind" \
            --argjson n "$(truth "$TMP/$1.out" ping)" '
            [inputs | select(.event == $k and (.msg_name == "PING" or .msg_name == "PONG"))
             | .msg_name] as $s
            | ($s | length) == 2 * $n
              and all(range($s | length); $s[.] == (if . % 2 == 0 then "PING" else "PONG" end))' "$j"
    done
}

for api in zstr zsock zmsg zframe zloop zmq; do
    pingpong_case "$api" "$api"
    alternate "$api"
done
# the receiver 64 messages behind: names are read from the frames, not handed over
pingpong_case zstr-burst zstr 64

# each kind of zloop handler has its own steps, as many as the handler ran
for path in reader timer poller; do
    equal "zloop: $path steps = the $path handlers' calls" \
        "$(jq -c --arg p "$path" 'select(.event == "step_begin" and .path == $p)' "$TMP/zloop.jsonl" |
            wc -l)" "$(truth "$TMP/zloop.out" "${path}_steps")"
done
check "zloop: timer and poller steps are the loop's actor's, and carry no message" jq -n -e '
    [inputs] as $all
    | ($all | map(select(.event == "spawn") | .actor)[0]) as $a
    | [$all[] | select((.event == "step_begin" or .event == "step_end")
                       and (.path == "timer" or .path == "poller"))]
    | all(.actor == $a and .msg == null)' "$TMP/zloop.jsonl"

# a zloop reader step handles the message it was called for
check "zloop: each reader step carries the id of the message its handler receives" jq -n -e '
    [inputs] as $all
    | ($all | map(select(.event == "step_begin" and .path == "reader") | .msg) | sort)
      == ($all | map(select(.event == "recv" and .actor != 1) | .msg) | sort)' \
    "$TMP/zloop.jsonl"

# ---- names of first frames, through CZMQ and through each of libzmq's send and receive calls
run_both names "$P/names"
for kind in send recv; do
    check "names: each $kind is named by its first frame" jq -n -e --arg k "$kind" \
        --argjson want "$(tail -n 1 "$TMP/names.out" | jq -c .ground_truth.names)" \
        '[inputs | select(.event == $k) | .msg_name] == $want' "$TMP/names.jsonl"
done
# zmq_send_const and zmq_sendiov move the pipe's counters like any send: ids stay paired
check "names: every message id is sent once and received once" jq -n -e '
    [inputs | select(.event == "send" or .event == "recv")]
    | group_by(.msg) | all(length == 2 and (map(.event) | sort) == ["recv", "send"])' \
    "$TMP/names.jsonl"

# ---- CZMQ's own actors
run_both classes "$P/classes" 200
j="$TMP/classes.jsonl"
out="$TMP/classes.out"
equal "classes: spawns = actors" "$(kind_count "$j" spawn)" "$(truth "$out" actors)"
equal "classes: exits = actors" "$(kind_count "$j" exit)" "$(truth "$out" actors)"
check "classes: actors named zproxy and zmonitor" jq -n -e \
    '[inputs | select(.event == "spawn") | .actor_name] | sort == ["zmonitor", "zproxy"]' "$j"
work=$(truth "$out" work_sends)
equal "classes: WORK sends (ours and the proxy's)" "$(named "$j" send WORK)" "$work"
equal "classes: WORK receives (the proxy's and ours)" "$(named "$j" recv WORK)" "$work"
check "classes: commands reach the actor they were sent to" jq -n -e '
    [inputs] as $all
    | ($all | map(select(.event == "spawn") | {(.actor_name): .actor}) | add) as $id
    | [["FRONTEND", "zproxy"], ["BACKEND", "zproxy"], ["LISTEN", "zmonitor"],
       ["START", "zmonitor"]]
    | all(.[0] as $n | .[1] as $a
          | [$all[] | select(.msg_name == $n and (.event == "send" or .event == "recv"))]
          | length == 2 and all(.actor == $id[$a]))' "$j"
check "classes: main receives each monitor event from zmonitor" jq -n -e \
    --argjson n "$(truth "$out" monitor_events)" '
    [inputs] as $all
    | ($all | map(select(.event == "spawn" and .actor_name == "zmonitor") | .actor)[0]) as $m
    | [$all[] | select(.event == "recv" and .actor == 1
                       and (.msg_name == "LISTENING" or .msg_name == "ACCEPTED"))]
    | length == $n and all(.sender == $m)' "$j"
equal "classes: \$TERM sends = actors" "$(named "$j" send '$TERM')" "$(truth "$out" actors)"

# ---- calls on no socket (NULL) fail with ENOTSOCK as untraced; the shim keeps nothing for
# them and records no message (before: a table entry of about 450 bytes each, never found
# again, 90 MB for 200,000 calls, and a send on a new socket number each)
traced "$TMP/nullsock.trace" "$P/nullsock" 100000 \
    >"$TMP/nullsock.out" 2>"$TMP/nullsock.err"
check "no socket: program succeeds" [ $? -eq 0 ]
equal "no socket: every call fails with ENOTSOCK" "$(truth "$TMP/nullsock.out" notsock)" 200000
check "no socket: memory does not grow with the calls ($(truth "$TMP/nullsock.out" growth_kb) KiB)" \
    [ "$(truth "$TMP/nullsock.out" growth_kb)" -lt 4096 ]
"$DECODE" -o "$TMP/nullsock.jsonl" "$TMP/nullsock.trace"
equal "no socket: only the real messages are sends" "$(kind_count "$TMP/nullsock.jsonl" send)" \
    $(($(truth "$TMP/nullsock.out" send) + $(truth "$TMP/nullsock.out" again)))
# a send that fails on a real socket (EAGAIN) is marked failed, a binary frame's too
equal "a failed send of a binary frame: marked failed" \
    "$(kind_count "$TMP/nullsock.jsonl" send_failed)" "$(truth "$TMP/nullsock.out" again)"

# ---- the shim's tables over a long run: 15,000 pipes one after another (more sockets than
# the socket table holds at once), then 1,000 distinct short payloads before the first PING
run_both tables "$P/tables" 15000 1000
j="$TMP/tables.jsonl"
equal "tables: every HELLO send has a message id (its pipe is tracked)" \
    "$(jq -c 'select(.event == "send" and .msg_name == "HELLO" and .msg != null)' "$j" | wc -l)" \
    "$(truth "$TMP/tables.out" hello)"
equal "tables: each HELLO is received under its send's id" \
    "$(jq -s '[.[] | select(.msg_name == "HELLO" and .msg != null)] | group_by(.msg)
              | map(select(length == 2)) | length' "$j")" "$(truth "$TMP/tables.out" hello)"
check "tables: PING keeps its name after the payloads (the last two of three)" \
    [ "$(named "$j" send PING)" -ge 2 ]
equal "tables: no table_full event" "$(kind_count "$j" table_full)" 0
