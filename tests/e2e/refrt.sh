#!/bin/sh
# The reference runtime's programs, traced: the trace's count of each event kind equals the
# runtime's own count, nothing is dropped, timestamps never go back, each message is sent,
# received and handled in that order, and tracing does not change what the program prints.
. "$(dirname "$0")/../lib.sh"
# the programs to run: the examples on librefrt.so, or those of another build of refrt
EX=${REFRT_EXAMPLES:-$B/examples}

run_case() { # run_case NAME PROGRAM ARGS...
    name=$1
    shift
    "$@" >"$TMP/$name.plain" 2>"$TMP/$name.plain.err"
    check "$name: runs untraced" [ $? -eq 0 ]
    traced "$TMP/$name.trace" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    check "$name: runs traced" [ $? -eq 0 ]
    check "$name: tracer printed nothing on stderr" [ ! -s "$TMP/$name.err" ]
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
    check "$name: decodes cleanly" [ $? -eq 0 ]
    j="$TMP/$name.jsonl"
    out="$TMP/$name.out"

    for kind in spawn send recv schedule park unpark exit; do
        equal "$name: $kind events = ground truth" "$(kind_count "$j" "$kind")" "$(truth "$out" "$kind")"
    done
    step=$(truth "$out" step)
    equal "$name: step_begin events = ground truth steps" "$(kind_count "$j" step_begin)" "$step"
    equal "$name: step_end events = ground truth steps" "$(kind_count "$j" step_end)" "$step"
    equal "$name: dropped" "$(summary "$j" dropped)" 0
    equal "$name: truncated" "$(summary "$j" truncated)" false
    equal "$name: summary events = event lines" "$(summary "$j" events)" "$(($(wc -l <"$j") - 1))"

    # the program's own output, but for the ground truth line (park and unpark counts vary
    # from run to run), and its deterministic counts
    head -n -1 "$TMP/$name.plain" >"$TMP/$name.plain.head"
    head -n -1 "$out" >"$TMP/$name.out.head"
    check "$name: output unchanged by tracing" cmp -s "$TMP/$name.plain.head" "$TMP/$name.out.head"
    for key in spawn send recv step exit; do
        equal "$name: ground truth $key same traced and untraced" \
            "$(truth "$out" "$key")" "$(truth "$TMP/$name.plain" "$key")"
    done

    check "$name: ts_ns never decreases" jq -n -e --slurpfile _ /dev/null \
        'reduce (inputs | select(.ts_ns) | .ts_ns) as $t ({ok: true, last: 0};
            {ok: (.ok and $t >= .last), last: $t}) | .ok' "$j"

    # per message: send <= recv <= step_begin <= step_end, each exactly once
    check "$name: every message is sent, received and handled once, in that order" jq -n -e '
        [inputs | select(.msg and (.event == "send" or .event == "recv" or
                                   .event == "step_begin" or .event == "step_end"))]
        | group_by(.msg)
        | all(map(.event) == ["send", "recv", "step_begin", "step_end"]
              and (map(.ts_ns) | . == sort))' "$j"

    # one timestamp for the events of one exchange (at_record_at): on a thread, a step_begin
    # right after its recv, a schedule right after the send that made it, but where the first
    # opened a block (the slow path stamps it itself): a block holds more than 1000 events, and
    # each thread's first event opens one
    unshared=$(jq -n '[inputs | select(.tid)] | group_by(.tid) | map([.[:-1], .[1:]] | transpose
        | map(select([.[0].event, .[1].event] | IN(["recv", "step_begin"], ["send", "schedule"]))
              | select(.[0].actor == .[1].actor and .[0].ts_ns != .[1].ts_ns)) | length) | add' "$j")
    blocks=$(jq -n '[inputs | select(.tid) | .tid] | (length / 1000 | floor) + (unique | length)' "$j")
    check "$name: events of one exchange share a timestamp ($unshared pairs not, at most $blocks)" \
        [ "$unshared" -le "$blocks" ]

    # an actor never runs two handlers at once
    check "$name: each actor's steps alternate begin/end" jq -n -e '
        [inputs | select(.event == "step_begin" or .event == "step_end")]
        | group_by(.actor)
        | all(map(.event) | . as $e | [range(length)]
              | all($e[.] == (if . % 2 == 0 then "step_begin" else "step_end" end)))' "$j"

    check "$name: every send names a message type" jq -n -e \
        '[inputs | select(.event == "send")] | all(has("msg_name"))' "$j"
}

run_case pingpong "$EX/pingpong" 10000
run_case fanout "$EX/fanout" 4 20000
run_case ring "$EX/ring" 16 500

# PING and PONG alternate, in order, starting with PING
check "pingpong: PING/PONG sends alternate" jq -n -e '
    [inputs | select(.event == "send" and (.msg_name == "PING" or .msg_name == "PONG"))
     | .msg_name] as $n
    | ($n | length) == 20000 and
      all(range($n | length); $n[.] == (if . % 2 == 0 then "PING" else "PONG" end))' \
    "$TMP/pingpong.jsonl"

# a send made inside a handler names the actor running that handler as its sender
check "pingpong: PONG is sent by the actor that received PING" jq -n -e '
    [inputs] as $all
    | ($all | map(select(.event == "step_begin" and .msg_name == "PING")) | .[0].actor) as $pong
    | $all | map(select(.event == "send" and .msg_name == "PONG")) | all(.sender == $pong)' \
    "$TMP/pingpong.jsonl"
