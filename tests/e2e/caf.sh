#!/bin/sh
# CAF programs traced through shim/caf.c. Each program counts what it did; its trace must hold
# exactly those sends and handled messages, named, with a spawn and an exit for every actor it
# created, and every flow must end at the step that handled its message. CAF's own hidden
# actors (spawned with the path "hidden") are left out of the counts. Also: output unchanged by
# tracing, a clean valgrind run, a libcaf_core that claims another version left untraced, and no
# libstdc++ in a C program that preloads the tracer; and the shim's layout constants are CAF's.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/caf"

jqok() { jq "$@" >/dev/null; }

# ours JSONL: the events about the program's actors (not CAF's hidden ones), one per line
ours() {
    jq -c -s '([.[] | select(.event == "spawn" and .path == "hidden") | .actor]) as $hidden
        | .[] | select(.actor as $a | $hidden | index($a) | not)' "$1"
}

count_of() { # count_of JSONL_OF_OURS EVENT [MSG_NAME]
    jq -c --arg e "$2" --arg n "${3:-}" \
        'select(.event == $e and ($n == "" or .msg_name == $n))' "$1" | wc -l
}

check_program() { # check_program NAME: the trace of run_both NAME against its ground truth
    name=$1 j="$TMP/$1.jsonl" o="$TMP/$1.ours" out="$TMP/$1.out"
    ours "$j" >"$o"
    equal "$name: sends = ground truth" "$(count_of "$o" send)" "$(truth "$out" sends)"
    equal "$name: messages handled (steps) = ground truth" "$(count_of "$o" step_begin)" \
        "$(truth "$out" handled)"
    equal "$name: a recv before every step" "$(count_of "$o" recv)" "$(truth "$out" handled)"
    equal "$name: step_end = step_begin" "$(count_of "$o" step_end)" "$(count_of "$o" step_begin)"
    equal "$name: spawns = actors created" "$(count_of "$o" spawn)" "$(truth "$out" actors)"
    equal "$name: exits = actors created" "$(count_of "$o" exit)" "$(truth "$out" actors)"
    check "$name: each actor spawned once, and exits once after" jqok -n -e \
        '[inputs | select(.event == "spawn" or .event == "exit")] | group_by(.actor)
         | all(map(.event) == ["spawn", "exit"])' "$o"
    for msg in $(grep '^{"ground_truth"' "$out" | jq -r '.ground_truth.msgs | keys[]'); do
        want=$(truth "$out" "msgs[\"$msg\"]")
        equal "$name: $msg sends = ground truth" "$(count_of "$o" send "$msg")" "$want"
        equal "$name: $msg steps = ground truth" "$(count_of "$o" step_begin "$msg")" "$want"
    done
    # every message: one send, then one recv and one step of its receiver, with its id and name
    check "$name: every message sent once, then received and handled once by its receiver" \
        jqok -n -e '[inputs | select(.event == "send" or .event == "recv" or .event == "step_begin")]
        | all(.msg != null) and (group_by(.msg) | all(
            length == 3 and (map(.event) | sort) == ["recv", "send", "step_begin"]
            and (map(.actor) | unique | length) == 1 and (map(.msg_name) | unique | length) == 1
            and (map(select(.event != "step_begin")) | map(.sender) | unique | length) == 1))' "$j"
    # one timestamp for the events of one exchange (at_record_at): on a thread, a step_begin
    # right after a recv, a schedule right after a send, a park or yield right after a step_end
    # have its timestamp, but where the first opened a block (a block holds more than 1000
    # events; each thread's first event opens one)
    unshared=$(jq -n '[inputs | select(.tid)] | group_by(.tid) | map([.[:-1], .[1:]] | transpose
        | map(select([.[0].event, .[1].event] | IN(["recv", "step_begin"], ["send", "schedule"],
                                                   ["step_end", "park"], ["step_end", "yield"]))
              | select(.[0].ts_ns != .[1].ts_ns)) | length) | add' "$j")
    blocks=$(jq -n '[inputs | select(.tid) | .tid] | (length / 1000 | floor) + (unique | length)' "$j")
    check "$name: events of one exchange share a timestamp ($unshared pairs not, at most $blocks)" \
        [ "$unshared" -le "$blocks" ]
    check_flows "$name"
}

check_flows() { # check_flows NAME: tracedecode's flows, from its Chrome output
    name=$1 c="$TMP/$1.chrome.json"
    "$DECODE" -f chrome -o "$c" "$TMP/$name.trace"
    # a flow record follows the record of its event: pair "s" and "f" by id, each with the
    # record before it
    jq -c 'reduce .traceEvents[] as $r ({last: null, s: {}, f: {}};
            if $r.ph == "s" then .s[$r.id | tostring] = .last
            elif $r.ph == "f" then .f[$r.id | tostring] = .last
            elif $r.ph == "t" then . else .last = $r end)' "$c" >"$TMP/$name.flows"
    equal "$name: a flow from every send ends at a step" \
        "$(jq -c '[(.s | length), ([.f[] | select(.ph == "B")] | length)]' "$TMP/$name.flows")" \
        "[$(kind_count "$TMP/$name.jsonl" send),$(kind_count "$TMP/$name.jsonl" send)]"
    check "$name: every flow ends at the step that handled its message" jqok -e \
        '. as $x | all($x.f | to_entries[]; $x.s[.key].args.msg == .value.args.msg)' \
        "$TMP/$name.flows"
}

# The layout facts the shim reads CAF's objects by, each against CAF's headers.
limit "$P/layout" >"$TMP/layout"
check "layout: the probe runs" [ $? -eq 0 ]
equal "layout: facts probed" "$(wc -l <"$TMP/layout")" 20
while read -r fact value; do
    equal "layout: $fact" \
        "$(awk -v f="$fact" '$1 == "#define" && $2 == f { print $3 }' "$TOP/shim/caf.c")" "$value"
done <"$TMP/layout"

run_both pingpong_reply "$P/pingpong" reply 2000
check_program pingpong_reply
check "pingpong_reply: replies are plain messages" jqok -n -e \
    '[inputs | select(.event == "send")] | all(.path == null)' "$TMP/pingpong_reply.ours"

run_both pingpong_request "$P/pingpong" request 2000
check_program pingpong_request
check "pingpong_request: pings are requests, pongs their responses, stop neither" jqok -n -e \
    '[inputs | select(.event == "send")] | all(
        (.msg_name == "ping" and .path == "request") or (.msg_name == "pong" and .path == "response")
        or (.msg_name == "stop" and .path == null))' "$TMP/pingpong_request.ours"
check "pingpong_request: each response goes back to the actor that sent the request" jqok -n -e \
    '[inputs | select(.event == "send")] | (map(select(.path == "request")) | map([.sender, .actor]) | unique)
        as $req | (map(select(.path == "response")) | map([.actor, .sender]) | unique) == $req' \
    "$TMP/pingpong_request.ours"
check "pingpong_request: the pinger sends from its own steps, named by its type" jqok -n -e \
    '[inputs] | (map(select(.event == "spawn")) | all(.actor_name == "caf::event_based_actor"))
        and (map(select(.event == "send" and .msg_name == "ping")) | all(.sender_name == "caf::event_based_actor"))' \
    "$TMP/pingpong_request.ours"

run_both fanout "$P/fanout" 4 200
check_program fanout
check "fanout: the master is named by its state, and is the workers' parent" jqok -n -e \
    '[inputs | select(.event == "spawn")] | (map(select(.actor_name == "master")) | length) == 1
        and (map(select(.actor_name == "master")) | .[0].actor) as $m
        | map(select(.actor_name != "master")) | length == 4 and all(.peer == $m)' "$TMP/fanout.ours"
check "fanout: every worker is scheduled on a named worker thread" jqok -n -e \
    '[inputs | select(.event == "schedule")] | length > 0 and all(.peer_name | startswith("caf.worker-"))' \
    "$TMP/fanout.ours"

run_both typed "$P/typed" 1000
check_program typed
check "typed: responses named after their type (@i32), typed actors after theirs" jqok -n -e \
    '[inputs] | (map(select(.event == "send" and .msg_name == "@i32")) | all(.path == "response"))
        and (map(select(.event == "spawn")) | all(.actor_name == "caf::typed_event_based_actor<...>"))' \
    "$TMP/typed.ours"

run_both spawner "$P/spawner" 20 10
check_program spawner
check "spawner: children have their parent actor as peer; parents have none" jqok -n -e \
    '[inputs] | (map(select(.event == "send" and .msg_name == "job")) | map([.actor, .sender]))
        as $jobs | (map(select(.event == "spawn" and .peer)) | map([.actor, .peer]) | sort) == ($jobs | sort)
        and (map(select(.event == "spawn" and .peer == null)) | length) == 10' "$TMP/spawner.ours"

run_both delayed "$P/delayed" 10 2
check_program delayed
check "delayed: ticks come from CAF's clock thread (one that runs no actor), sent by the ticker to itself" \
    jqok -n -e '[inputs] | (map(select(.event == "step_begin")) | map(.tid) | unique) as $workers
        | map(select(.event == "send" and .msg_name == "tick")) | all(.actor == .sender)
          and (map(.tid) | unique | length == 1 and (.[0] as $t | $workers | index($t) | not))' \
    "$TMP/delayed.ours"
check "delayed: idle workers park (path sleep)" [ "$(jq -c 'select(.event == "park" and .path == "sleep")' "$TMP/delayed.jsonl" | wc -l)" -gt 0 ]

# memcheck on one traced run, short
timeout -s KILL 600 valgrind -q --error-exitcode=99 --trace-children=yes env ACTORTRACE_OUT="$TMP/vg.trace" \
    LD_PRELOAD="$LIB" "$P/pingpong" request 200 >"$TMP/vg.out" 2>"$TMP/vg.err"
check "valgrind: a traced run exits cleanly" [ $? -eq 0 ]
check "valgrind: no error reported" [ ! -s "$TMP/vg.err" ]
"$DECODE" -o "$TMP/vg.jsonl" "$TMP/vg.trace"
equal "valgrind: the run was traced" "$(count_of "$TMP/vg.jsonl" step_begin ping)" 200

# Remoting (libcaf_io): a client process asks a calculator published by a server process. Each
# receives the other's messages from an actor of the other node, whose id numbers actors there:
# marked remote, it takes no name of this trace, even where a local actor has the same id.
remote_run() { # remote_run N: server and client traced, into server.trace and client.trace
    rm -f "$TMP/port"
    traced "$TMP/server.trace" timeout 60 "$P/remote" server "$TMP/port" "$1" >"$TMP/server.out" 2>&1 &
    server=$!
    for _ in $(seq 300); do [ -s "$TMP/port" ] && break; sleep 0.1; done
    traced "$TMP/client.trace" timeout 60 "$P/remote" client "$TMP/port" "$1" >"$TMP/client.out" 2>&1
    check "remote: the client runs traced" [ $? -eq 0 ]
    wait "$server"
    check "remote: the server runs traced" [ $? -eq 0 ]
}
remote_run 200
for side in server:add client:result; do
    name=${side%%:*} msg=${side#*:} j="$TMP/remote_${side%%:*}.jsonl"
    "$DECODE" -o "$j" "$TMP/$name.trace"
    check "remote $name: decodes cleanly" [ $? -eq 0 ]
    equal "remote $name: $msg handled = ground truth" "$(count_of "$j" recv "$msg")" \
        "$(truth "$TMP/$name.out" handled)"
    check "remote $name: every $msg comes from a remote actor, unnamed" jqok -n -e --arg m "$msg" '
        [inputs | select(.msg_name == $m and (.event == "recv" or .event == "send"))]
        | length > 0 and all(.sender_remote == true and .sender != null and (has("sender_name") | not))' "$j"
done
check "remote server: the client's id is a named local actor's id too (the case that misnamed)" \
    jqok -n -e '[inputs] | (map(select(.event == "spawn" and .actor_name) | .actor)) as $local
        | any(.[]; .msg_name == "add" and .event == "recv" and (.sender as $s | $local | index($s)))' \
    "$TMP/remote_server.jsonl"
"$DECODE" -f stats --json -o "$TMP/remote.stats" "$TMP/server.trace"
check "remote server stats: the client's actor is an actor of its own, remote, unnamed here" \
    jqok -n -e --slurpfile j "$TMP/remote_server.jsonl" '
    ([$j[] | select(.msg_name == "add" and .event == "recv") | .sender] | unique) as $senders
    | input | [.actors[] | select(.remote)] as $remote
    | ($senders | length) == 1
      and any($remote[]; .actor == $senders[0] and .name == "remote actor \($senders[0])")' \
    "$TMP/remote.stats"
"$DECODE" -f dot -o "$TMP/remote.dot" "$TMP/server.trace"
check "remote server dot: the remote sender is a node of its own, called remote" \
    grep -q 'label="remote actor [0-9]*"' "$TMP/remote.dot"

# The version guard: the real library under its own file name, its DT_SONAME patched to claim
# 0.17.9. The program runs as usual, untraced, and the tracer says why, once.
mkdir -p "$TMP/other"
real=$(ldd "$P/pingpong" | awk '$1 ~ /^libcaf_core/ { print $3 }')
perl -pe 's/libcaf_core\.so\.0\.17\.6\0/libcaf_core.so.0.17.9\0/g' "$real" >"$TMP/other/$(basename "$real")"
equal "guard: the stand-in claims 0.17.9" \
    "$(objdump -p "$TMP/other/$(basename "$real")" | awk '$1 == "SONAME" { print $2 }')" libcaf_core.so.0.17.9
LD_LIBRARY_PATH="$TMP/other" traced "$TMP/guard.trace" "$P/pingpong" request 2000 >"$TMP/guard.out" 2>"$TMP/guard.err"
check "guard: the program runs" [ $? -eq 0 ]
check "guard: output as untraced" cmp -s "$TMP/guard.out" "$TMP/pingpong_request.plain"
equal "guard: one line on stderr" "$(wc -l <"$TMP/guard.err")" 1
check "guard: it names both versions" grep -q 'libcaf_core.so.0.17.9 is not libcaf_core.so.0.17.6' "$TMP/guard.err"
events=0
[ -e "$TMP/guard.trace" ] && events=$("$DECODE" "$TMP/guard.trace" | tail -n 1 | jq .events)
equal "guard: nothing recorded from CAF" "$events" 0

# A C program that preloads the tracer does not load libstdc++ (CAF programs have it already).
limit env LD_DEBUG=files LD_PRELOAD="$LIB" ACTORTRACE_OUT="$TMP/c.trace" "$B/examples/pingpong" 1000 \
    >/dev/null 2>"$TMP/c.debug"
check "C program: ld.so loaded the tracer" grep -q 'file=.*libactortrace' "$TMP/c.debug"
check "C program: no libstdc++" [ "$(grep -c 'file=libstdc++' "$TMP/c.debug")" -eq 0 ]
LD_DEBUG=files "$P/delayed" 1 1 >/dev/null 2>"$TMP/cxx.debug"
check "C++ program: the same check sees libstdc++" grep -q 'file=libstdc++' "$TMP/cxx.debug"
