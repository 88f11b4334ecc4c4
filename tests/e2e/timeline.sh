#!/bin/sh
# The views tell what ran: on a program whose steps are long and overlap on one core, every
# track of the Perfetto and Chrome outputs holds properly nested slices (paired as
# trace_processor and catapult pair them: an end closes the topmost open slice of its track),
# the actor and thread tracks hold exactly the steps of the JSONL, and the core tracks exactly
# the pieces of steps recomputed from the JSONL, each a piece of a step during which that step's
# thread, and no other, recorded on that core. Then the Chrome sort order, track timestamps,
# ids that differ between outputs, names that are not UTF-8, and slices cut by filters.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/proto/pftsv.sh"

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

# pieces JSONL: the core-track slices the JSONL implies, recomputed here from the rule of
# docs/DECODER.md: a core's track holds one thread's open steps at a time; a thread's event on a
# core ends another thread's pieces there and moves its own open steps there (ending them where
# they were); a step's piece ends at its end when its thread is on that core. {core, name, b, e}
pieces() {
    jq -n -c '
        def leave($t; $ts): .where[$t] as $k
            | .out += [range(0; .open[$t] | length) as $i
                       | {core: $k, name: .open[$t][$i], b: .pb[$t][$i], e: $ts}]
            | .owner[$k | tostring] = null | .where[$t] = null;
        def enter($t; $k; $ts): .where[$t] = $k | .owner[$k | tostring] = $t | .pb[$t] = [.open[$t][] | $ts];
        def place($t; $k; $ts): .owner[$k | tostring] as $o
            | (if $o != null and $o != $t then leave($o; $ts) else . end)
            | (if .where[$t] != null and .where[$t] != $k then leave($t; $ts) else . end)
            | (if (.open[$t] | length) > 0 and .where[$t] == null then enter($t; $k; $ts) else . end);
        reduce (inputs | select(.event)) as $e ({owner: {}, where: {}, open: {}, pb: {}, out: []};
            ($e.tid | tostring) as $t | $e.core as $k | $e.ts_ns as $ts
            | if $e.event == "step_begin" then place($t; $k; $ts) | .open[$t] += [$e.actor_name]
                  | if .where[$t] == null then enter($t; $k; $ts) else .pb[$t] += [$ts] end
              elif $e.event == "step_end" and (.open[$t] | length) > 0 then
                  (if .where[$t] != null and .where[$t] != $k then leave($t; $ts) else . end)
                  | (.where[$t] == $k) as $here
                  | (if $here then .out += [{core: $k, name: .open[$t][-1], b: .pb[$t][-1], e: $ts}]
                         | .pb[$t] |= .[:-1] else . end)
                  | .open[$t] |= .[:-1]
                  | (if $here and (.open[$t] | length) == 0
                     then .owner[$k | tostring] = null | .where[$t] = null else . end)
                  | place($t; $k; $ts)
              else place($t; $k; $ts) end)
        | .out[]' "$1"
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
    equal "$name $f: core slices = the pieces recomputed from the JSONL, begin and end" \
        "$(jq -s -c '[.[] | select(.kind == "core") | [(.track | ltrimstr("core ") | tonumber), .name, .b, .e]] | sort' "$s")" \
        "$(jq -s -c 'map([.core, .name, .b, .e]) | sort' "$TMP/$name.pieces")"
    equal "$name $f: every step has a core slice from its begin, on its core" \
        "$(jq -n -c --slurpfile st "$st" --slurpfile s "$s" '
            [$s[] | select(.kind == "core") | "\(.track) \(.b)"] as $c
            | [$st[] | select(("core \(.core) \(.b)") as $k | $c | index([$k]) | not)] | length')" 0
}

# Four actors on two workers, 3 ms of CPU a step, all on one core: the workers preempt each
# other inside steps.
name=overlap
RT_WORKERS=2 traced "$TMP/$name.trace" taskset -c 0 "$B/tests/progs/long_steps" 4 20 3 >"$TMP/$name.out"
"$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
check "$name: traced and decoded" [ $? -eq 0 ]
steps "$TMP/$name.jsonl" >"$TMP/$name.steps"
equal "$name: steps = ground truth" "$(wc -l <"$TMP/$name.steps")" "$(truth "$TMP/$name.out" step)"
pieces "$TMP/$name.jsonl" >"$TMP/$name.pieces"
overlapping=$(jq -s '. as $s | [$s[] | . as $a | select(any($s[]; .tid != $a.tid and .b < $a.e and $a.b < .e))] | length' "$TMP/$name.steps")
check "$name: steps of the two workers overlap in time on the one core ($overlapping steps)" [ "$overlapping" -gt 0 ]
"$DECODE" -f perfetto -o "$TMP/$name.pftrace" "$TMP/$name.trace"
pfslices "$TMP/$name.pftrace" >"$TMP/$name.pf.slices"
check_slices "$name" perfetto "$TMP/$name.pf.slices"
"$DECODE" -f chrome -o "$TMP/$name.chrome" "$TMP/$name.trace"
chrome_slices "$TMP/$name.chrome" >"$TMP/$name.chrome.slices"
check_slices "$name" chrome "$TMP/$name.chrome.slices"

# Chrome: actors first, then threads, then cores (thread_sort_index)
equal "$name chrome: tracks sorted actors, then threads, then cores" \
    "$(jq -c '[.traceEvents[] | select(.ph == "M")] as $m
        | [$m[] | select(.name == "thread_sort_index") | {tid, i: .args.sort_index}] as $sort
        | [$m[] | select(.name == "thread_name")
           | {tid, kind: (if .tid < 1073741824 then 1 elif (.args.name | test("^core ")) then 2 else 0 end)}]
        | map(.tid as $t | .i = ($sort[] | select(.tid == $t) | .i)) | sort_by(.i) | map(.kind)
        | . == sort' "$TMP/$name.chrome")" true

# Perfetto: every track descriptor has a timestamp; track uuids and flow ids of two traces'
# outputs do not collide, so that they can be loaded together
pftsv "$TMP/$name.pftrace" >"$TMP/$name.pf.tsv"
equal "$name perfetto: every track descriptor has a timestamp" \
    "$(awk '$1 == "T" && $5 == "-"' "$TMP/$name.pf.tsv" | wc -l)" 0
RT_WORKERS=2 traced "$TMP/again.trace" "$B/tests/progs/long_steps" 4 10 0 >/dev/null
"$DECODE" -f perfetto -o "$TMP/again.pftrace" "$TMP/again.trace"
ids() { pftsv "$1" | awk '$1 == "T" { print "track", $2 } $1 == "E" && $6 != "-" { print "flow", $6 }' | sort -u; }
ids "$TMP/$name.pftrace" >"$TMP/$name.ids"
ids "$TMP/again.pftrace" >"$TMP/again.ids"
check "two traces' outputs: both have flows" sh -c "grep -q flow '$TMP/$name.ids' && grep -q flow '$TMP/again.ids'"
equal "two traces' outputs: no track uuid or flow id in common" "$(comm -12 "$TMP/$name.ids" "$TMP/again.ids" | wc -l)" 0

# Names are the program's bytes: the Perfetto strings stay valid UTF-8 (libprotobuf says
# nothing), bad bytes become U+FFFD; DOT shows a control byte as '?', not as an escape
printf 'actor 1 sp\377in\303\251\nmsg 1 W\300\257O\tRK\n' >"$TMP/bad.names"
"$DECODE" --names "$TMP/bad.names" -f perfetto -o "$TMP/bad.pftrace" "$TMP/$name.trace"
protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_min.proto" <"$TMP/bad.pftrace" \
    >"$TMP/bad.txt" 2>"$TMP/bad.err"
check "bad UTF-8 names: protoc decodes the Perfetto output without a complaint" [ ! -s "$TMP/bad.err" ]
check "bad UTF-8 names: replaced by U+FFFD, the rest kept" \
    grep -q 'W\\357\\277\\275\\357\\277\\275O\\tRK' "$TMP/bad.txt"
"$DECODE" --names "$TMP/bad.names" -f dot -o "$TMP/bad.dot" "$TMP/$name.trace"
check "dot: a tab in a name is drawn as '?', no escape in the label" \
    grep -qF "W$(printf '\357\277\275\357\277\275')O?RK" "$TMP/bad.dot"

# A cut inside steps: --to in the middle of the first step, and --event step_begin, leave no
# slice open; what the cut left open ends at the cut
to=$(jq -s '[.[] | select(.event == "step_begin")][0] as $b
    | [.[] | select(.event == "step_end" and .tid == $b.tid and .ts_ns > $b.ts_ns)][0] as $e
    | ($b.ts_ns + $e.ts_ns) / 2 | floor' "$TMP/$name.jsonl")
for cut in "--to $to" "--event step_begin"; do
    "$DECODE" $cut -f perfetto -o "$TMP/cut.pftrace" "$TMP/$name.trace"
    pfslices "$TMP/cut.pftrace" >"$TMP/cut.pf.slices"
    "$DECODE" $cut -f chrome -o "$TMP/cut.chrome" "$TMP/$name.trace"
    chrome_slices "$TMP/cut.chrome" >"$TMP/cut.chrome.slices"
    for f in pf chrome; do
        equal "$cut, $f: every slice ends" \
            "$(jq -s '[.[] | select(.kind == "open" or .kind == "unmatched end")] | length' "$TMP/cut.$f.slices")" 0
        if [ "$cut" = "--to $to" ]; then
            equal "$cut, $f: the steps it cut end at the cut" \
                "$(jq -s '[.[] | select(.kind != "core")] | map(.e) | max' "$TMP/cut.$f.slices")" "$to"
        fi
    done
done
