#!/bin/sh
# tracedecode's views on the reference runtime's programs: stats, Perfetto, Chrome JSON and DOT
# agree with the JSONL decode of the same trace and with the runtime's ground truth; every
# flow joins a send to the step that handled that message; the protobuf decodes with protoc;
# filters select exactly what they say; --names and several files; no format crashes on a cut
# trace. Expected values are computed here, from the JSONL, never written down.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/proto/pftsv.sh"

jqok() { jq "$@" >/dev/null; }

check_stats() { # check_stats NAME: the --json report against the JSONL
    name=$1 j="$TMP/$1.jsonl" s="$TMP/$1.stats.json"
    "$DECODE" -f stats --json -o "$s" "$TMP/$name.trace"
    check "$name stats: exit 0, valid JSON" jqok -e . "$s"
    for kind in spawn exit send recv step_begin step_end schedule park unpark; do
        equal "$name stats: $kind count = JSONL" "$(jq ".kinds.$kind // 0" "$s")" "$(kind_count "$j" "$kind")"
    done
    equal "$name stats: events = JSONL summary" "$(jq .events "$s")" "$(summary "$j" events)"
    equal "$name stats: sends = ground truth" "$(jq .kinds.send "$s")" "$(truth "$TMP/$name.out" send)"
    got=$(jq -c '[.messages[] | {name, sent, received, handled}] | sort_by(.name)' "$s")
    want=$(jq -n -c '[inputs | select(.msg_name) | {name: .msg_name, event}] | group_by(.name)
        | map({name: .[0].name, sent: map(select(.event == "send")) | length,
               received: map(select(.event == "recv")) | length,
               handled: map(select(.event == "step_begin")) | length})' "$j")
    equal "$name stats: sent/received/handled per message name = JSONL" "$got" "$want"
    equal "$name stats: every send matched, none unhandled" \
        "$(jq -c '.matching | [.unhandled_sends, .steps_without_send, .recvs_without_send]' "$s")" "[0,0,0]"
    # latency per message name: exact from the JSONL (send -> step_begin of the same msg id,
    # nearest rank), against the histogram's figure, which is within 1/64 of the value
    jq -n -c '[inputs | select(.event == "send" or .event == "step_begin")] | group_by(.msg)
        | map({name: .[0].msg_name, l: (.[1].ts_ns - .[0].ts_ns)}) | group_by(.name)
        | map(.[0].name as $n | map(.l) | sort | . as $v | length as $c
              | {name: $n, max: $v[-1], p: [0.5, 0.9, 0.99]
                 | map(. * $c | ceil | if . < 1 then 1 else . end | $v[. - 1])})' "$j" >"$TMP/$name.lat"
    check "$name stats: latency p50/p90/p99 within 1/32 of exact, max exact" jqok -n -e \
        --slurpfile got "$s" --slurpfile want "$TMP/$name.lat" '
        $want[0] | all(. as $w | $got[0].messages[] | select(.name == $w.name) | .latency_ns as $l
            | $l.max == $w.max and ([$l.p50, $l.p90, $l.p99] | to_entries
                | all(.value as $g | $w.p[.key] as $e | ($g - $e | fabs) <= $e / 32 + 1)))'
    check "$name stats: per-actor latency counts = its steps" jqok -e \
        'all(.actors[]; .latency_ns.count == .steps)' "$s"
    "$DECODE" -f stats -o "$TMP/$name.stats.txt" "$TMP/$name.trace"
    check "$name stats: text report has every section" sh -c "grep -q '^Events by kind' '$TMP/$name.stats.txt' &&
        grep -q '^Messages by name' '$TMP/$name.stats.txt' && grep -q '^Mailbox depth' '$TMP/$name.stats.txt' &&
        grep -q '^Threads' '$TMP/$name.stats.txt' && grep -q '^Drops' '$TMP/$name.stats.txt'"
}

check_perfetto() { # check_perfetto NAME
    name=$1 j="$TMP/$1.jsonl" t="$TMP/$1.pf.tsv"
    "$DECODE" -f perfetto -o "$TMP/$name.pftrace" "$TMP/$name.trace"
    check "$name perfetto: exit 0" [ $? -eq 0 ]
    pftsv "$TMP/$name.pftrace" >"$t"
    check "$name perfetto: protoc decodes it" [ -s "$t" ]
    begins=$(kind_count "$j" step_begin)
    ends=$(kind_count "$j" step_end)
    others=$(($(summary "$j" events) - begins - ends))
    # a step is a slice on its actor's and its thread's track (and in pieces on core tracks:
    # tests/e2e/timeline.sh)
    awk '$1 == "T" && $0 !~ / "core [0-9]+"$/ { keep[$2] = 1 } $1 == "E" && keep[$4]' "$t" >"$t.steps"
    equal "$name perfetto: slice begins = 2 x step_begin" "$(grep -c '^E .* TYPE_SLICE_BEGIN ' "$t.steps")" $((2 * begins))
    equal "$name perfetto: slice ends = 2 x step_end" "$(grep -c '^E .* TYPE_SLICE_END ' "$t.steps")" $((2 * ends))
    equal "$name perfetto: one instant per other event" "$(grep -c '^E .* TYPE_INSTANT ' "$t")" "$others"
    # flows: each starts at a send instant and ends at the actor-track slice of the step that
    # handled the same message id, at that step's time (the recv instant it passes is between)
    awk '$1 == "N" && $3 == "\"send" { send[$2] = 1 }
         $1 == "E" && $6 != "-" && $3 == "TYPE_INSTANT" && send[$5] { print $6, $8 }' "$t" |
        sort >"$TMP/$name.out.flows"
    awk '$1 == "E" && $7 != "-" { print $7, $8, $2, $3 }' "$t" | sort >"$TMP/$name.in.flows"
    equal "$name perfetto: a flow starts at every send" "$(wc -l <"$TMP/$name.out.flows")" "$(kind_count "$j" send)"
    equal "$name perfetto: every flow ends at a slice begin" \
        "$(awk '$4 != "TYPE_SLICE_BEGIN"' "$TMP/$name.in.flows" | wc -l)" 0
    equal "$name perfetto: every flow ends once, at the step of the message it started with" \
        "$(join "$TMP/$name.out.flows" "$TMP/$name.in.flows" | awk '$2 == $3' | wc -l)" "$begins"
    jq -r 'select(.event == "step_begin") | "\(.msg) \(.ts_ns)"' "$j" | sort >"$TMP/$name.steps"
    equal "$name perfetto: flow ends carry the step's time" \
        "$(awk '{ print $2, $3 }' "$TMP/$name.in.flows" | sort | comm -3 - "$TMP/$name.steps" | wc -l)" 0
    threads=$(jq -s '[.[] | select(.tid) | .tid] | unique | length' "$j")
    equal "$name perfetto: a track per thread" "$(awk '$1 == "T" && $3 != "-"' "$t" | wc -l)" "$threads"
}

check_chrome() { # check_chrome NAME
    name=$1 j="$TMP/$1.jsonl" c="$TMP/$1.chrome.json"
    "$DECODE" -f chrome -o "$c" "$TMP/$name.trace"
    check "$name chrome: valid JSON" jqok -e .traceEvents "$c"
    begins=$(kind_count "$j" step_begin)
    others=$(($(summary "$j" events) - begins - $(kind_count "$j" step_end)))
    equal "$name chrome: B, E, i records off core tracks = 2 x steps, 2 x steps, other events" \
        "$(jq -c '[.traceEvents[] | select(.ph == "M" and .name == "thread_name" and (.args.name | startswith("core "))) | .tid] as $cores
                  | [.traceEvents[] | select(.tid as $t | $cores | index([$t]) | not) | .ph] | [(map(select(. == "B")) | length),
                  (map(select(. == "E")) | length), (map(select(. == "i")) | length)]' "$c")" \
        "[$((2 * begins)),$((2 * $(kind_count "$j" step_end))),$others]"
    # a flow record follows the record of its event: pair "s" and "f" by id, each with the
    # record before it
    jq -c 'reduce .traceEvents[] as $r ({last: null, s: {}, f: {}};
            if $r.ph == "s" then .s[$r.id | tostring] = .last
            elif $r.ph == "f" then .f[$r.id | tostring] = .last
            elif $r.ph == "t" then . else .last = $r end)' "$c" >"$TMP/$name.chrome.flows"
    equal "$name chrome: a flow starts at every send, and ends at a step" \
        "$(jq -c '[(.s | length), (.f | length), ([.s[] | select(.name | startswith("send "))] | length),
                   ([.f[] | select(.ph == "B")] | length)]' "$TMP/$name.chrome.flows")" \
        "[$(kind_count "$j" send),$begins,$(kind_count "$j" send),$begins]"
    check "$name chrome: every flow joins a send to the step that handled its message" jqok -e \
        '. as $x | all($x.f | to_entries[]; $x.s[.key].args.msg == .value.args.msg)' \
        "$TMP/$name.chrome.flows"
    equal "$name chrome: summary events" "$(jq .summary.events "$c")" "$(summary "$j" events)"
}

check_dot() { # check_dot NAME: edges and counts against the sends in the JSONL
    name=$1 j="$TMP/$1.jsonl" g="$TMP/$1.dot"
    "$DECODE" -f dot -o "$g" "$TMP/$name.trace"
    check "$name dot: a digraph" sh -c "head -n 1 '$g' | grep -q '^digraph actors {' && tail -n 1 '$g' | grep -q '^}'"
    # "0:S" -> "0:R" [penwidth=N, label="A 3\nB 2\n"]: sender receiver name count, per line
    sed -n 's/^  "0:\([0-9]*\)" -> "0:\([0-9]*\)" .*label="\(.*\)"\];$/\1 \2 \3/p' "$g" |
        awk '{ n = split($0, parts, "\\\\n"); split(parts[1], head, " ");
               s = head[1]; r = head[2]; parts[1] = substr(parts[1], length(s) + length(r) + 3);
               for (i = 1; i < n; i++) { c = parts[i]; sub(/.* /, "", c); nm = parts[i];
                   sub(/ [0-9]+$/, "", nm); print s, r, nm, c } }' | sort >"$TMP/$name.edges"
    jq -r 'select(.event == "send") | "\(.sender // 0) \(.actor) \(.msg_name)"' "$j" |
        sort | uniq -c | awk '{ print $2, $3, $4, $1 }' | sort >"$TMP/$name.sends"
    check "$name dot: edges, message names and counts = the sends" cmp -s "$TMP/$name.edges" "$TMP/$name.sends"
    equal "$name dot: one node per actor that sent or was sent to" \
        "$(grep -c '^    "0:[0-9]*" \[label=' "$g")" \
        "$(jq -r 'select(.event == "send") | (.sender // 0), .actor' "$j" | sort -u | wc -l)"
}

run_views() { # run_views NAME PROGRAM ARGS...
    name=$1
    shift
    traced "$TMP/$name.trace" "$@" >"$TMP/$name.out" 2>/dev/null
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
    check "$name: traced and decoded" [ $? -eq 0 ]
    check_stats "$name"
    check_perfetto "$name"
    check_chrome "$name"
    check_dot "$name"
}

run_views pingpong "$B/examples/pingpong" 3000
run_views fanout "$B/examples/fanout" 4 3000
run_views ring "$B/examples/ring" 8 200

# two formats' output does not depend on decoding ahead on a second thread
for f in perfetto stats; do
    "$DECODE" -j 1 -f "$f" -o "$TMP/j1.$f" "$TMP/fanout.trace"
    "$DECODE" -j 2 -f "$f" -o "$TMP/j2.$f" "$TMP/fanout.trace"
    check "$f: the same with --jobs 1 and 2" cmp -s "$TMP/j1.$f" "$TMP/j2.$f"
done

# a cut trace: every format, under ASan and UBSan, reports the cut and does not crash
size=$(stat -c %s "$TMP/ring.trace")
head -c $((size * 2 / 3)) "$TMP/ring.trace" >"$TMP/cut.trace"
for f in jsonl perfetto chrome stats dot; do
    "$ASAN_DECODE" -f "$f" -o "$TMP/cut.$f" "$TMP/cut.trace" 2>"$TMP/cut.$f.err"
    status=$?
    check "cut trace, $f: exit 1, no sanitizer report" sh -c "[ $status -eq 1 ] &&
        ! grep -q 'AddressSanitizer\|runtime error\|LeakSanitizer' '$TMP/cut.$f.err'"
done
"$ASAN_DECODE" -f stats --json -o "$TMP/cut.stats.json" "$TMP/cut.trace" 2>/dev/null
equal "cut trace, stats: reported truncated" "$(jq .truncated "$TMP/cut.stats.json")" true
