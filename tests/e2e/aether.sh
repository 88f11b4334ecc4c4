#!/bin/sh
# Aether programs, traced: the programs run on tests/targets/aether's stand-in for the ABI of Aether
# v0.572.0's runtime (its exported functions, Message and ActorBase layouts and calling habits;
# not Aether itself). Each program prints the counts its logic implies and the runtime's own
# count of what it did; the trace must show every send once with the path it took and its real
# sender, every step with the message it took, and every other event as often as the runtime
# counted it. Tracing must not change what the program prints.
. "$(dirname "$0")/../lib.sh"

AE="$B/tests/aether"
MAIN_ID=1099511627776 # MAIN_ACTOR in shim/aether.c
DETERMINISTIC="send local remote message_local message_remote batch_local batch_remote ask_local
ask_remote step spawn exit reply drop_dead"

expected() { # expected OUTPUT KEY
    grep '^{"expected"' "$1" | jq -r ".expected.$2"
}

path_count() { # path_count JSONL PATH: sends that took PATH
    jq -c "select(.event == \"send\" and .path == \"$2\")" "$1" | wc -l
}

run_case() { # run_case NAME UNLINKED PROGRAM ARGS...: UNLINKED messages set their sender_id
    name=$1 unlinked=$2
    shift 2
    "$@" >"$TMP/$name.plain" 2>&1
    check "$name: runs untraced" [ $? -eq 0 ]
    traced "$TMP/$name.trace" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    check "$name: runs traced" [ $? -eq 0 ]
    check "$name: tracer printed nothing on stderr" [ ! -s "$TMP/$name.err" ]
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
    check "$name: decodes cleanly" [ $? -eq 0 ]
    j="$TMP/$name.jsonl"
    out="$TMP/$name.out"

    for key in $DETERMINISTIC; do
        equal "$name: runtime's $key = program's expected" "$(truth "$out" "$key")" \
            "$(expected "$out" "$key")"
    done
    grep -v '^{"ground_truth"' "$TMP/$name.plain" >"$TMP/$name.plain.kept"
    grep -v '^{"ground_truth"' "$out" >"$TMP/$name.out.kept"
    check "$name: output unchanged by tracing" cmp -s "$TMP/$name.plain.kept" "$TMP/$name.out.kept"

    equal "$name: send events = ground truth" "$(kind_count "$j" send)" "$(truth "$out" send)"
    for way in local remote; do
        equal "$name: sends with path $way" "$(path_count "$j" $way)" "$(truth "$out" $way)"
        for fn in message batch ask; do
            equal "$name: sends with path $fn/$way" "$(path_count "$j" $fn/$way)" \
                "$(truth "$out" ${fn}_$way)"
        done
    done
    for kind in step_begin step_end; do
        equal "$name: $kind events = ground truth steps" "$(kind_count "$j" $kind)" "$(truth "$out" step)"
    done
    for kind in spawn schedule; do
        equal "$name: $kind events = ground truth spawns" "$(kind_count "$j" $kind)" "$(truth "$out" spawn)"
    done
    for kind in exit reply park; do
        equal "$name: $kind events = ground truth" "$(kind_count "$j" $kind)" "$(truth "$out" $kind)"
    done
    equal "$name: unpark events = ground truth parks" "$(kind_count "$j" unpark)" "$(truth "$out" park)"
    equal "$name: dropped" "$(summary "$j" dropped)" 0

    # each message: one send with a fresh id, then one step that took it, on the receiver, of
    # the type it was sent with; a message whose sender_id the program set has no id
    for kind in send step_begin; do
        equal "$name: ${kind}s without a message id" \
            "$(jq -c "select(.event == \"$kind\" and .msg == null)" "$j" | wc -l)" "$unlinked"
    done
    check "$name: every message is sent once and stepped once, with its type, in order" jq -n -e '
        [inputs | select((.event == "send" or .event == "step_begin") and .msg)]
        | (group_by(.msg) | all(length == 2 and .[0].event == "send" and
              .[1].event == "step_begin" and .[0].actor == .[1].actor and
              .[0].msg_name == .[1].msg_name and .[0].ts_ns <= .[1].ts_ns))' "$j"

    # the sender of a send is the actor whose step runs on that thread, or main outside any
    check "$name: every send names its real sender" jq -n -e --argjson main "$MAIN_ID" '
        reduce (inputs | select(.event == "send" or .event == "step_begin" or
                                .event == "step_end")) as $e ({ok: true, running: {}};
            ($e.tid | tostring) as $t
            | if $e.event == "step_begin" then .running[$t] = $e.actor
              elif $e.event == "step_end" then .running[$t] = null
              else .ok = (.ok and $e.sender == (.running[$t] // $main)) end)
        | .ok' "$j"
}

run_case pingpong 0 "$AE/pingpong" 5000
run_case forkjoin 1 "$AE/forkjoin" 8 500
run_case ask 0 "$AE/ask" 500
run_case single 0 "$AE/single" 2000

# a reply answers its ask: same msg id, to the asker, from the actor that took the question
check "ask: every reply names its ask, the asker and the replier" jq -n -e '
    [inputs] as $all
    | ($all | map(select(.event == "send")) | INDEX(.msg | tostring)) as $asks
    | ($all | map(select(.event == "step_begin")) | INDEX(.msg | tostring)) as $steps
    | $all | map(select(.event == "reply"))
    | length == 500 and all(($asks[.msg | tostring].sender == .actor) and
                            ($steps[.msg | tostring].actor == .peer))' "$TMP/ask.jsonl"

# in main-thread mode every step runs on the main thread, inside main's send
check "single: every step runs on the main thread" jq -n -e '
    [inputs | select(.tid)] | (.[0].tid) as $main
    | map(select(.event == "step_begin")) | all(.tid == $main)' "$TMP/single.jsonl"

# a worker woken by a signal names who signalled: ping or pong sending, or main (its START,
# and the shutdown)
check "pingpong: unparks name the actor that signalled" jq -n -e --argjson main "$MAIN_ID" '
    [inputs | select(.event == "unpark" and .peer)]
    | length > 0 and all(.peer == 1 or .peer == 2 or .peer == $main)' "$TMP/pingpong.jsonl"

# ---- --names: "ID NAME" lines and a JSON array of names in type order name the same messages;
# the types start at 0, as Aether numbers them, and type 0 is named like any other
printf '# pingpong.c: START = 0, PING = 1, PONG = 2\n0 START\n1 PING\n\n2 PONG\n' >"$TMP/names.txt"
printf '["START",\n "PING", "P\\u004fNG"]\n' >"$TMP/names.json"
for form in txt json; do
    "$DECODE" --names "$TMP/names.$form" -o "$TMP/named.$form.jsonl" "$TMP/pingpong.trace"
    check "names ($form): decodes" [ $? -eq 0 ]
done
check "names: both forms give the same names" cmp -s "$TMP/named.txt.jsonl" "$TMP/named.json.jsonl"
check "names: every send and step is named by its type" jq -n -e '
    [inputs | select(.event == "send" or .event == "step_begin" or .event == "step_end")]
    | length == 3 * 10001 and
      (map(.msg_name) | unique) == ["PING", "PONG", "START"]' "$TMP/named.json.jsonl"
equal "names: START, type 0, names main's one send and its step" \
    "$(jq -c 'select(.msg_name == "START") | .event' "$TMP/named.txt.jsonl" | tr '\n' ' ')" \
    '"send" "step_begin" "step_end" '
check "names: the same file also names the types with --format aether" jq -n -e '
    [inputs | select(.event)] | length > 0
    and all(if .event | startswith("send") then .msg_name != null
            else (has("type") | not) or .type_name != null end)
    and (map(select(.msg_name == "START") | .msg) | unique) == [0]
    and (map(select(.type_name == "START") | .type) | unique) == [0]' \
    "$(
        "$DECODE" --names "$TMP/names.txt" -f aether -o "$TMP/named.aether" "$TMP/pingpong.trace"
        echo "$TMP/named.aether"
    )"
unnamed=$(jq -c 'select(.event == "send" and .msg_name == null)' "$TMP/named.txt.jsonl" | wc -l)
equal "names: no send left unnamed" "$unnamed" 0
# a names file none of whose names the trace carries (numbered from 1, or another program's)
printf '7 START\n8 PING\n' >"$TMP/other.txt"
"$DECODE" --names "$TMP/other.txt" -o /dev/null "$TMP/pingpong.trace" 2>"$TMP/other.err"
check "names: a file none of whose names occur still decodes" [ $? -eq 0 ]
equal "names: ... and is warned about" "$(cat "$TMP/other.err")" \
    "tracedecode: $TMP/other.txt: none of its 2 names is carried by an event of the trace"
"$DECODE" --names "$TMP/names.txt" -o /dev/null "$TMP/pingpong.trace" 2>"$TMP/used.err"
check "names: a file whose names occur is not warned about" [ ! -s "$TMP/used.err" ]
for bad in '["a",]' '["a"' '["a"] x' '[1]' '["\u12"]' '["\ud800"]'; do
    printf '%s' "$bad" >"$TMP/bad.json"
    "$ASAN_DECODE" --names "$TMP/bad.json" -o /dev/null "$TMP/pingpong.trace" 2>"$TMP/bad.err"
    check "names: malformed JSON $bad is a usage error" [ $? -eq 2 ]
    check "names: malformed JSON $bad is reported" grep -q 'expected a JSON array' "$TMP/bad.err"
done

# ---- --format aether: Aether's tracer's schema, with the sends --trace does not see
for name in pingpong forkjoin ask single; do
    a="$TMP/$name.aether"
    "$ASAN_DECODE" -f aether -o "$a" "$TMP/$name.trace"
    check "aether format ($name): decodes" [ $? -eq 0 ]
    out="$TMP/$name.out"
    # Aether's tracer (runtime/utils/aether_trace.c) writes ts_ns, core, event, actor, msg,
    # msg_name only for a named type, sender only when it has one (never on steps, whose msg
    # is -1); ours adds cpu, and on steps type and type_name, after them
    check "aether format ($name): Aether's fields, in its order, then only ours" jq -n -e '
        def aether: if (.event | startswith("send"))
            then ["ts_ns", "core", "event", "actor", "msg"] + (if .msg_name then ["msg_name"] else [] end) + ["sender"]
            else ["ts_ns", "core", "event", "actor", "msg"] end;
        def ours: if (.event | startswith("send")) then ["cpu"]
            else ["cpu"] + (if has("type") then ["type"] else [] end)
                 + (if .type_name then ["type_name"] else [] end) end;
        [inputs] | (.[:-1] | length > 0 and all(keys_unsorted == aether + ours))
        and (.[:-1] | all(.msg_name != null or (has("msg_name") | not)))
        and (.[:-1] | map(select(.event | startswith("step"))) | all(.msg == -1 and (.type // 0) >= 0))
        and (.[-1] | keys_unsorted == ["summary", "events", "dropped", "capacity_per_core"])' "$a"
    equal "aether format ($name): send_local = local sends" "$(kind_count "$a" send_local)" \
        "$(($(truth "$out" local) + $(truth "$out" message_local) + $(truth "$out" batch_local) + $(truth "$out" ask_local)))"
    equal "aether format ($name): send_remote = remote sends" "$(kind_count "$a" send_remote)" \
        "$(($(truth "$out" remote) + $(truth "$out" message_remote) + $(truth "$out" batch_remote) + $(truth "$out" ask_remote)))"
    equal "aether format ($name): step_begin = steps" "$(kind_count "$a" step_begin)" "$(truth "$out" step)"
    equal "aether format ($name): summary events = lines" "$(summary "$a" events)" "$(($(wc -l <"$a") - 1))"
    check "aether format ($name): msg is the type and sender the real sender, as in JSONL" jq -n -e \
        --slurpfile ours "$TMP/$name.jsonl" '
        [inputs | select(.event // "" | startswith("send"))] as $a
        | [$ours[] | select(.event == "send")] as $j
        | ($a | length) == ($j | length) and
          all(range($a | length); $a[.].sender == $j[.].sender and $a[.].actor == $j[.].actor
                                 and "name_\($a[.].msg)" == $j[.].msg_name)' "$a"
done

# Aether's core is its scheduler's: ping runs on core 0, pong on core 1, main's sends on -1;
# a one-actor program runs its actor on the main thread: -1 throughout
check "aether format: core is the scheduler core, -1 for the main thread" jq -n -e --argjson main "$MAIN_ID" '
    [inputs | select(.event)] | length > 0
    and all(if .event | startswith("step") then .core == .actor - 1
            elif .sender == $main then .core == -1 else .core == .sender - 1 end)' "$TMP/pingpong.aether"
check "aether format (single): every event on the main thread, core -1" jq -n -e \
    '[inputs | select(.event)] | length > 0 and all(.core == -1)' "$TMP/single.aether"

# ---- a panic leaves a step by a jump: the step ends "abandoned", and the thread records on
# with its own sender and depth. "main": the one actor runs inside main's send (main-thread
# mode); "worker": on a worker. Then main spawns an actor and sends it 5 messages.
for where in main worker; do
    traced "$TMP/panic.trace" "$AE/panic" $where >"$TMP/panic.out" 2>"$TMP/panic.err"
    check "panic on $where: runs traced" [ $? -eq 0 ]
    check "panic on $where: tracer printed nothing on stderr" [ ! -s "$TMP/panic.err" ]
    "$DECODE" -o "$TMP/panic.jsonl" "$TMP/panic.trace"
    j="$TMP/panic.jsonl"
    out="$TMP/panic.out"
    equal "panic on $where: the runtime saw one panic" "$(truth "$out" panic)" 1
    equal "panic on $where: send events = ground truth" "$(kind_count "$j" send)" \
        "$(truth "$out" send)"
    for kind in step_begin step_end; do
        equal "panic on $where: $kind events = ground truth steps" "$(kind_count "$j" $kind)" \
            "$(truth "$out" step)"
    done
    equal "panic on $where: one step ended abandoned, the panicking actor's" "$(jq -c \
        'select(.path == "abandoned") | [.event, .actor]' "$j")" '["step_end",1]'
    equal "panic on $where: spawn events = ground truth" "$(kind_count "$j" spawn)" \
        "$(truth "$out" spawn)"
    check "panic on $where: every spawn names main as the parent" jq -n -e \
        --argjson m "$MAIN_ID" '[inputs | select(.event == "spawn") | .peer] | all(. == $m)' "$j"
    check "panic on $where: main's sends name main, the panicking step's its actor" jq -n -e \
        --argjson m "$MAIN_ID" '[inputs | select(.event == "send")] | all(.sender == $m or
        (.sender == 1 and .actor == 2))' "$j"
    rm -f "$TMP/panic.trace"
done

# ---- the guard: a library that shares two of the runtime's names and nothing else is left alone
traced "$TMP/other.trace" "$AE/guard/prog" >"$TMP/other.out" 2>"$TMP/other.err"
check "guard: a look-alike library's program runs traced" [ $? -eq 0 ]
equal "guard: its calls are forwarded untouched" "$(cat "$TMP/other.out")" "total 5092"
equal "guard: one line says why the shim is off" "$(grep -c 'aether: scheduler_send_remote is missing' "$TMP/other.err")" 1
equal "guard: nothing else on stderr" "$(wc -l <"$TMP/other.err")" 1
check "guard: nothing recorded, so no trace file" [ ! -e "$TMP/other.trace" ]

# ---- the layout check: the same runtime with its step pointer elsewhere, as another version
# of Aether might have it; the programs run on it untouched (LD_LIBRARY_PATH beats their RUNPATH)
LD_LIBRARY_PATH="$AE/moved" traced "$TMP/moved.trace" "$AE/pingpong" 1000 >"$TMP/moved.out" \
    2>"$TMP/moved.err"
check "layout: pingpong runs traced on a runtime of another layout" [ $? -eq 0 ]
equal "layout: its output is right" "$(head -n 1 "$TMP/moved.out")" \
    "pingpong: 1000 rounds, ping saw 1000, pong saw 1000, 0 out of order"
equal "layout: one line says the step pointer is not at v0.572.0's offset" \
    "$(grep -c 'aether: the step pointer is not where v0.572.0 has it' "$TMP/moved.err")" 1
equal "layout: nothing else on stderr" "$(wc -l <"$TMP/moved.err")" 1
check "layout: nothing recorded, so no trace file" [ ! -e "$TMP/moved.trace" ]

# ---- a killed run: --trace writes nothing then; our trace keeps what was committed
mkdir -p "$TMP/rings" # the ring file a kill leaves behind goes with $TMP
ACTORTRACE_RING_DIR="$TMP/rings" ACTORTRACE_OUT="$TMP/killed.trace" LD_PRELOAD="$LIB" \
    "$AE/pingpong" 100000000 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ -e "$TMP/killed.trace" ] && break
    sleep 0.05
done
sleep 0.3
kill -KILL "$pid"
wait "$pid" 2>/dev/null
"$ASAN_DECODE" -f aether -o "$TMP/killed.aether" "$TMP/killed.trace" 2>/dev/null
check "killed: decodes as a cut trace (status 1)" [ $? -eq 1 ]
check "killed: the aether format has the sends and steps made before the kill" jq -n -e '
    [inputs | select(.event)] | (map(select(.event == "send_remote")) | length) > 100 and
    (map(select(.event == "step_begin")) | length) > 100' "$TMP/killed.aether"
