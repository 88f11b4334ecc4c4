#!/bin/sh
# The views tell what ran: on a program whose steps are long and overlap on one core, every
# track of the Perfetto and Chrome outputs holds properly nested slices (paired as
# trace_processor and catapult pair them: an end closes the topmost open slice of its track),
# the actor and thread tracks hold exactly the steps of the JSONL, and each core-track slice is
# a piece of a step during which that step's thread, and no other, recorded on that core.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/proto/pftsv.sh"

# chrome_slices CHROME_JSON: the same objects as pfslices, from B/E records
chrome_slices() {
    jq -c 'def key: "\(.pid):\(.tid)";
        reduce .traceEvents[] as $r ({names: {}, st: {}, out: []};
            ($r | key) as $k
            | if $r.ph == "M" and $r.name == "thread_name" then .names[$k] = $r.args.name
              elif $r.ph == "B" then .st[$k] += [[$r.name, ($r.ts * 1000 | round)]]
              elif $r.ph == "E" then
                  if (.st[$k] | length) > 0
                  then .out += [{k: $k, name: .st[$k][-1][0], b: .st[$k][-1][1], e: ($r.ts * 1000 | round)}]
                       | .st[$k] |= .[:-1]
                  else .out += [{k: $k, kind: "unmatched end", name: "", b: 0, e: 0}] end
              else . end)
        | .names as $n
        | (.out[] | .track = $n[.k]), (.st | to_entries[] | .key as $k | .value[] | {k: $k, kind: "open", track: $n[$k], name: .[0], b: .[1]})
        | .kind //= (if (.k | split(":")[1] | tonumber) < 1073741824 then "thread"
                     elif (.track | test("^core [0-9]+$")) then "core" else "actor" end)
        | del(.k)' "$1"
}

# steps JSONL: each step of the JSONL, paired on its thread: {tid, core, actor, name, b, e}
steps() {
    jq -n -c 'reduce (inputs | select(.event == "step_begin" or .event == "step_end")) as $e
        ({st: {}, out: []}; ($e.tid | tostring) as $t
            | if $e.event == "step_begin" then .st[$t] += [$e]
              elif (.st[$t] | length) > 0 then
                  .out += [.st[$t][-1] | {tid, core, actor: .actor_name, name: .msg_name, b: .ts_ns, e: $e.ts_ns}]
                  | .st[$t] |= .[:-1]
              else . end) | .out[]' "$1"
}

# check_slices NAME FORMAT SLICES: the slices of one output against the JSONL's steps
check_slices() {
    name=$1 f=$2 s=$3 j="$TMP/$1.jsonl" st="$TMP/$1.steps"
    equal "$name $f: no end without an open slice, no slice left open" \
        "$(jq -s -c '[.[] | select(.kind == "unmatched end" or .kind == "open")] | length' "$s")" 0
    for kind in actor thread; do
        equal "$name $f: $kind tracks hold exactly the steps, begin and end" \
            "$(jq -s -c --arg k "$kind" '[.[] | select(.kind == $k) | [.b, .e]] | sort' "$s")" \
            "$(jq -s -c '[.[] | [.b, .e]] | sort' "$st")"
    done
    # a core slice [b, e) is inside a step of its actor, whose thread recorded every event of
    # [b, e) on that core, and no other thread recorded one there in (b, e)
    bad=$(jq -n -c --slurpfile ev "$j" --slurpfile st "$st" --slurpfile s "$s" '
        [$ev[] | select(.event)] as $ev
        | [$s[] | select(.kind == "core")
           | (.track | ltrimstr("core ") | tonumber) as $core | . as $c
           | select(
               ([$st[] | select(.actor == $c.name and .b <= $c.b and $c.e <= .e)
                 | .tid as $tid
                 | select(all($ev[] | select(.tid == $tid and .ts_ns >= $c.b and .ts_ns < $c.e); .core == $core))]
                | length == 0)
               or any($ev[]; .core == $core and .ts_ns > $c.b and .ts_ns < $c.e
                             and ([$st[] | select(.actor == $c.name and .b <= $c.b and $c.e <= .e) | .tid]
                                  | index([.tid]) | not)))]
        | length')
    equal "$name $f: every core slice is a piece of a step that ran on that core, alone" "$bad" 0
    equal "$name $f: every step has a core slice from its begin, on its core" \
        "$(jq -n -c --slurpfile st "$st" --slurpfile s "$s" '
            [$s[] | select(.kind == "core") | "\(.track) \(.b)"] as $c
            | [$st[] | select(("core \(.core) \(.b)") as $k | $c | index([$k]) | not)] | length')" 0
}

# Four actors on two workers, 3 ms of CPU a step, all on one core: the workers preempt each
# other inside steps.
name=overlap
RT_WORKERS=2 traced "$TMP/$name.trace" taskset -c 0 "$B/tests/progs/long_steps" 4 10 3 >"$TMP/$name.out"
"$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
check "$name: traced and decoded" [ $? -eq 0 ]
steps "$TMP/$name.jsonl" >"$TMP/$name.steps"
equal "$name: steps = ground truth" "$(wc -l <"$TMP/$name.steps")" "$(truth "$TMP/$name.out" step)"
"$DECODE" -f perfetto -o "$TMP/$name.pftrace" "$TMP/$name.trace"
pfslices "$TMP/$name.pftrace" >"$TMP/$name.pf.slices"
check_slices "$name" perfetto "$TMP/$name.pf.slices"
"$DECODE" -f chrome -o "$TMP/$name.chrome" "$TMP/$name.trace"
chrome_slices "$TMP/$name.chrome" >"$TMP/$name.chrome.slices"
check_slices "$name" chrome "$TMP/$name.chrome.slices"
cp "$TMP"/overlap.* /tmp/v/ 2>/dev/null
