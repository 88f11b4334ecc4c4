#!/bin/sh
# Erlang and Elixir programs on the BEAM (Debian's OTP 25.2.3, erts 13.1.5), traced through
# shim/beam.c by entry patching of beam.smp. Each program (tests/targets/beam) runs a scenario
# through tests/targets/beam/bt.erl, which prints the counts the scenario implies and the BEAM's own
# counts of sends and receives from erlang:trace on the same run; the trace must show every one of
# them, each send matched to the receive that took it, with its real sender and its name.
. "$(dirname "$0")/../lib.sh"

SRC="$TOP/tests/targets/beam"
EBIN="$TMP/ebin"
ACTORTRACE="$B/actortrace"

# the guard: stand-ins for other emulators (tests/targets/beam/guard/emulator.c) whose functions the
# shim patches; it says why in one line and forwards every call untouched
for version in 12.3.2 13.1.5; do
    emulator="$B/tests/beam/emulator-$version"
    "$emulator" 1000 >"$TMP/guard.plain" 2>&1
    ACTORTRACE_OUT="$TMP/guard.trace" LD_PRELOAD="$PRODUCT_LIB" "$emulator" 1000 \
        >"$TMP/guard.out" 2>"$TMP/guard.err"
    equal "guard $version: exit status unchanged" $? 0
    check "guard $version: every call forwarded (output unchanged)" \
        cmp -s "$TMP/guard.plain" "$TMP/guard.out"
    case $version in
    12.3.2) why="erts 12.3.2, not 13.1.5" ;;
    *) why="its atom table is not laid out as erts 13.1.5's" ;;
    esac
    equal "guard $version: one line on stderr says why" "$(cat "$TMP/guard.err")" \
        "actortrace: beam: $why; its calls are forwarded untraced (docs/shims/beam.md)"
    check "guard $version: no trace" [ ! -e "$TMP/guard.trace" ]
done

if ! command -v erl >/dev/null || ! command -v erlc >/dev/null; then
    echo "not ok - beam: erl is not installed (scripts/install-deps.sh installs erlang-base)"
    exit 0
fi
mkdir -p "$EBIN"
check "beam: test programs compile" erlc -o "$EBIN" "$SRC"/*.erl

# stable OUTPUT: the program's output but the line with the BEAM's count of runs
stable() {
    grep -v '^{"erlang_trace_runs"' "$1"
}

line() { # line OUTPUT: the scenario's line of counts
    grep '^{"test"' "$1" | tail -n 1
}

# scenario NAME MAIN COMMAND...: runs COMMAND untraced and traced by `actortrace record`, then
# checks the trace against the counts the program printed; MAIN is the registered name of the
# scenario's main process
scenario() {
    name=$1 main=$2
    shift 2
    (cd "$TMP" && timeout 120 "$@") >"$TMP/$name.plain" 2>&1
    equal "$name: runs untraced" $? 0
    mkdir -p "$TMP/$name.dir"
    (cd "$TMP/$name.dir" && timeout 120 "$ACTORTRACE" record -o "$TMP/$name.dir/run.trace" -- "$@") \
        >"$TMP/$name.out" 2>"$TMP/$name.err"
    equal "$name: runs traced, same exit status" $? 0
    stable "$TMP/$name.plain" >"$TMP/$name.plain.stable"
    stable "$TMP/$name.out" >"$TMP/$name.out.stable"
    check "$name: output unchanged by tracing" cmp -s "$TMP/$name.plain.stable" "$TMP/$name.out.stable"
    equal "$name: one trace file, from the emulator (the launchers leave none)" \
        "$(ls "$TMP/$name.dir")" run.trace
    check "$name: one line on stderr, the trace's" \
        sh -c "[ \$(wc -l <'$TMP/$name.err') -eq 1 ] && grep -q ' 0 dropped' '$TMP/$name.err'"
    "$DECODE" "$TMP/$name.dir/run.trace" | head -n -1 >"$TMP/$name.jsonl"
    jq -s -c --arg main "$main" -f "$SRC/counts.jq" "$TMP/$name.jsonl" >"$TMP/$name.counts"
    out=$(line "$TMP/$name.out")
    got() { jq -r ".$1" "$TMP/$name.counts"; }
    for key in spawn send recv exit; do
        equal "$name: $key events = the program's count" "$(got $key)" \
            "$(echo "$out" | jq -r ".expected.$key")"
    done
    for key in send recv; do
        equal "$name: $key events = erlang:trace's count" "$(got $key)" \
            "$(echo "$out" | jq -r ".erlang_trace.$key")"
    done
    for key in $(echo "$out" | jq -r '.expected | keys[] | select(test(":"))'); do
        field=${key%%:*} value=${key#*:}
        table=sends_named
        [ "$field" = exit ] && table=exits_by_reason
        equal "$name: $field events with name $value = the program's count" \
            "$(jq -r --arg v "$value" ".$table[\$v] // 0" "$TMP/$name.counts")" \
            "$(echo "$out" | jq -r --arg k "$key" '.expected[$k]')"
    done
    equal "$name: every send matched to its receive by id, receiver and sender" \
        "$(got matched)" "$(got send)"
    equal "$name: sends and receives inside a step of their process" "$(got outside_steps)" 0
    equal "$name: every step_begin has its step_end" "$(got step_end)" "$(got step_begin)"
    runs=$(grep '^{"erlang_trace_runs"' "$TMP/$name.out" | jq -r .erlang_trace_runs)
    check "$name: steps ($(got step_begin)) at most erlang:trace's runs ($runs)" \
        [ "$(got step_begin)" -le "$runs" ]
    check "$name: pids shown as <0.N.0>" grep -q '"actor_pid":"<0\.[0-9]*\.0>"' "$TMP/$name.jsonl"
    equal "$name: the main process named by its registered name" "$(got named_main)" true
}

erl_scenario() { # erl_scenario MODULE ARGS...
    module=$1
    shift
    scenario "$module" "${module}_main" erl -noshell -pa "$EBIN" -s "$module" start "$@" -s init stop
}

erl_scenario ring 10 100
equal "ring: message names" "$(jq -c .msg_names "$TMP/ring.counts")" '["done","ring","stop","token"]'
# each scheduler thread parks between runs, and its parks and unparks alternate from a park (its
# last park may have no unpark: the emulator halts with it asleep)
equal "ring: parks alternate with unparks, between runs" "$(jq -s '
    reduce (.[] | select(.tid != null)) as $e ({}; ($e.tid | tostring) as $t
      | if $e.event == "step_begin" then .[$t].run = true
        elif $e.event == "step_end" then .[$t].run = false
        elif $e.event == "park" then .[$t].bad += (if .[$t].parked or .[$t].run then 1 else 0 end)
                                     | .[$t].parked = true
        elif $e.event == "unpark" then .[$t].bad += (if .[$t].parked then 0 else 1 end)
                                       | .[$t].parked = false
        else . end) | [.[].bad // 0] | add' "$TMP/ring.jsonl")" 0
# each parking thread is a scheduler of its own: as many names as threads, all of that form
equal "ring: each scheduler named by its type and number" "$(jq -s -c '
    map(select(.event == "park")) | [(map(.actor_name) | unique | length), (map(.tid) | unique
      | length), all(.actor_name | test("^(scheduler|dirty-cpu|dirty-io)-[1-9][0-9]*$"))]' \
    "$TMP/ring.jsonl" | jq -c '.[0] == .[1] and .[2]')" true
# the schedule a send's queueing makes has the send's timestamp (at_record_at), but where the
# send opened a block (a block holds more than 1000 events; each thread's first event opens one)
unshared=$(jq -n '[inputs | select(.tid)] | group_by(.tid) | map([.[:-1], .[1:]] | transpose
    | map(select([.[0].event, .[1].event] == ["send", "schedule"] and .[0].actor == .[1].actor)
          | select(.[0].ts_ns != .[1].ts_ns)) | length) | add' "$TMP/ring.jsonl")
blocks=$(jq -n '[inputs | select(.tid) | .tid] | (length / 1000 | floor) + (unique | length)' \
    "$TMP/ring.jsonl")
check "ring: a send and the schedule it makes share a timestamp ($unshared not, at most $blocks)" \
    [ "$unshared" -le "$blocks" ]
erl_scenario gensrv 20 30
equal "gensrv: the server's calls go to it by its registered name" "$(jq -r -s '
    map(select(.event == "send" and .msg_name == "$gen_call" and .sender_name == "gensrv_main")
      | .actor_name) | unique | join(",")' \
    "$TMP/gensrv.jsonl")" gensrv_server
erl_scenario selective 50
erl_scenario kill 20
erl_scenario supv 5
if command -v elixir >/dev/null; then
    scenario exgenserver exgenserver_main elixir -pa "$EBIN" "$SRC/genserver.exs" 20 30
else
    echo "not ok - exgenserver: elixir is not installed (scripts/install-deps.sh installs it)"
fi
# the worker takes every b before any a: its first receive is of a message sent later
equal "selective: the first message taken is a b, sent after every a" \
    "$(jq -s -r --arg main selective_main '(map(select(.actor_name == $main))[0].actor) as $m
        | map(select(.event == "recv" and .sender == $m and .msg_name != "trace"))[0].msg_name' "$TMP/selective.jsonl")" b
