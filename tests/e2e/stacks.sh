#!/bin/sh
# Call stacks (ACTORTRACE_STACKS, docs/STACKS.md): tests/targets/progs/stacks sends from known call
# chains (a static function, a linked library, a dlopen'd library, a signal handler); the
# decoded stacks name those functions in order, innermost first. Sampling keeps 1 in N, depth
# cuts, a stripped program decodes to module + offset, and decoding needs no binary.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/proto/pftsv.sh"
PROG="$B/tests/progs/stacks"
DL="$B/tests/stacks/libstackdl.so"

run() { # run NAME ROUNDS ENV-ARGS...: trace the program, decode with the sanitized decoder
    name=$1 rounds=$2
    shift 2
    traced_nop "$TMP/$name.trace" env "$@" "$PROG" "$rounds" "$DL" >"$TMP/$name.out" 2>"$TMP/$name.err"
    check "$name: runs traced" [ $? -eq 0 ]
    check "$name: nothing on stderr" [ ! -s "$TMP/$name.err" ]
    "$ASAN_DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace" 2>"$TMP/$name.decode.err"
    check "$name: decodes cleanly" [ $? -eq 0 ]
}

# frames JSONL ACTOR N: the first N frames of the first stack of the actor's sends, one a line,
# with the offsets left out ("inner_send (stacks)")
frames() {
    jq -c --argjson a "$2" 'select(.event == "send" and .actor == $a and .stack) | .stack' "$1" |
        head -n 1 | jq -r --argjson n "$3" '.[:$n][]' | sed 's/+0x[0-9a-f]* / /' | tr '\n' ' '
}
# jsonl_stacks JSONL: the stack of each event that has one, a line each, innermost frame first,
# without the offsets: "inner_send (stacks) middle_send (stacks) ..."
jsonl_stacks() {
    jq -r 'select(.stack) | .stack | map(sub("\\+0x[0-9a-f]+ "; " ")) | join(" ")' "$1"
}
# pf_stacks PFTRACE: the same from a Perfetto trace: each track event's callstack_iid resolved
# through the interned Callstack, its Frames (outermost first there), their function names and
# the last component of their Mapping's path; a frame without a function shows its rel_pc.
pf_stacks() {
    protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_min.proto" <"$1" | awk '
        /{$/ { block[++depth] = $1; ids = ""; name = fn = map = pc = last = "-"; next }
        /^ *}$/ {
            b = block[depth--]
            if (b == "function_names" || b == "mapping_paths") str[iid] = name
            if (b == "frames") { ffn[iid] = fn; fmap[iid] = map; fpc[iid] = pc }
            if (b == "mappings") mpath[iid] = last
            if (b == "callstacks") cs[iid] = ids
            next
        }
        { key = $1; sub(":$", "", key); val = $2 }
        key == "iid" { iid = val }
        key == "str" { $1 = ""; name = substr($0, 2); gsub(/^"|"$/, "", name) }
        key == "function_name_id" { fn = val }
        key == "mapping_id" { map = val }
        key == "rel_pc" { pc = val }
        key == "path_string_ids" { last = val }
        key == "frame_ids" { ids = ids " " val }
        key == "callstack_iid" { ev[++n] = val }
        END {
            for (e = 1; e <= n; e++) {
                k = split(cs[ev[e]], f, " "); line = ""
                for (i = k; i >= 1; i--) {
                    id = f[i]
                    text = ffn[id] != "-" ? str[ffn[id]] : sprintf("0x%x", fpc[id])
                    if (fmap[id] != "-") text = text " (" str[mpath[fmap[id]]] ")"
                    line = line (i < k ? " " : "") text
                }
                print line
            }
        }'
}
with_stack() { # with_stack JSONL: sends that carry a stack
    jq -c 'select(.event == "send" and .stack)' "$1" | wc -l
}

run off 3 -u ACTORTRACE_STACKS
equal "off: no stack without ACTORTRACE_STACKS" "$(with_stack "$TMP/off.jsonl")" 0
"$ASAN_DECODE" --format stats -o "$TMP/off.stats" "$TMP/off.trace"
check "off: stats has no top senders" sh -c "! grep -q '^Top senders' '$TMP/off.stats'"
equal "off: the sends" "$(kind_count "$TMP/off.jsonl" send)" 6

run on 20 ACTORTRACE_STACKS=send
j="$TMP/on.jsonl"
equal "on: every send, and nothing else" "$(kind_count "$j" send)" 23
equal "on: every send has a stack" "$(with_stack "$j")" 23
equal "on: no companion event shows" "$(grep -c '"event":"stack"' "$j")" 0
equal "on: static and exported functions of the program, in order" "$(frames "$j" 1 4)" \
    "inner_send (stacks) middle_send (stacks) outer_send (stacks) main (stacks) "
equal "on: a linked library's static and exported functions" "$(frames "$j" 2 3)" \
    "lib_inner (libstacklinked.so) stacklinked_send (libstacklinked.so) main (stacks) "
equal "on: a dlopen'd library's functions" "$(frames "$j" 3 3)" \
    "lib_inner (libstackdl.so) stackdl_send (libstackdl.so) main (stacks) "
equal "on: captured in a signal handler" "$(frames "$j" 4 1)" "on_signal (stacks) "
equal "on: the handler's stack ends where raise delivered the signal" \
    "$(jq -c 'select(.actor == 4) | .stack | length' "$j")" 1
equal "on: one stack per call chain (deduplicated)" \
    "$(jq -c 'select(.stack) | .stack' "$j" | sort -u | wc -l)" 4

# Companions are not events: every view counts them apart ("stacks"), and a filter that names
# the events keeps their stacks (the companion's own fields are not what it filters on).
equal "on: the summary's events are the sends alone" "$(summary "$j" events)" 23
equal "on: the summary counts the stacks apart" "$(summary "$j" stacks),$(summary "$j" stacks_skipped)" "23,0"
"$ASAN_DECODE" --format stats --json -o "$TMP/on.stats" "$TMP/on.trace"
equal "on: stats counts the sends alone, stacks apart" \
    "$(jq -c '[.events, .stacks, .stacks_skipped, (.kinds | keys)]' "$TMP/on.stats")" '[23,23,0,["send"]]'
"$ASAN_DECODE" --format stats -o "$TMP/on.stats.txt" "$TMP/on.trace"
check "on: the stats text says how many stacks" grep -q '^call stacks on 23 events (0 skipped)$' "$TMP/on.stats.txt"
check "on: the stats text lists no stack kind" sh -c "! grep -q '^  stack ' '$TMP/on.stats.txt'"
jsonl_stacks "$j" >"$TMP/on.stacks"
"$ASAN_DECODE" --format chrome -o "$TMP/on.chrome" "$TMP/on.trace"
equal "on: chrome draws the sends alone" \
    "$(jq -c '[([.traceEvents[] | select(.ph == "i")] | length), .summary.events, .summary.stacks]' "$TMP/on.chrome")" '[23,23,23]'
equal "on: chrome gives each send its stack, as JSONL does" \
    "$(jq -r '.traceEvents[] | select(.args.stack) | .args.stack | map(sub("\\+0x[0-9a-f]+ "; " ")) | join(" ")' "$TMP/on.chrome" |
        cmp -s - "$TMP/on.stacks" && echo same)" same
"$ASAN_DECODE" --msg name_1 --event send -o "$TMP/filtered.jsonl" "$TMP/on.trace"
equal "on: filtered events keep their stacks" \
    "$(jq -c 'select(.event == "send" and .stack)' "$TMP/filtered.jsonl" | wc -l),$(summary "$TMP/filtered.jsonl" events)" \
    "$(jq -c 'select(.msg_name == "name_1")' "$j" | wc -l),$(jq -c 'select(.msg_name == "name_1")' "$j" | wc -l)"

# Perfetto: each send's TrackEvent names an interned Callstack whose frames, functions and
# mappings read as JSONL's stack; no companion is drawn.
"$ASAN_DECODE" --format perfetto -o "$TMP/on.pftrace" "$TMP/on.trace"
check "perfetto: decodes cleanly" [ $? -eq 0 ]
protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_min.proto" \
    <"$TMP/on.pftrace" >"$TMP/on.pf.txt" 2>"$TMP/on.pf.err"
check "perfetto: protoc decodes it without a complaint" [ ! -s "$TMP/on.pf.err" ]
pf_stacks "$TMP/on.pftrace" >"$TMP/on.pf.stacks"
equal "perfetto: a callstack on each of the 23 sends" "$(wc -l <"$TMP/on.pf.stacks")" 23
check "perfetto: the callstacks name what JSONL names, in order" cmp -s "$TMP/on.stacks" "$TMP/on.pf.stacks"
equal "perfetto: the first frames of chain 1" "$(head -n 1 "$TMP/on.pf.stacks" | cut -d' ' -f1-4)" \
    "inner_send (stacks) middle_send (stacks)"
equal "perfetto: each stack interned once" "$(grep -c '^    callstacks {' "$TMP/on.pf.txt")" 4
equal "perfetto: each module interned once" "$(grep -c '^    mappings {' "$TMP/on.pf.txt")" \
    "$(jq -r 'select(.stack) | .stack[] | sub(".* \\("; "(")' "$j" | sort -u | wc -l)"
equal "perfetto: no companion drawn" "$(pftsv "$TMP/on.pftrace" | grep -c '^N [0-9]* "stack')" 0

# Top senders: sends grouped by the innermost frame outside a runtime's library (libnop.so,
# which defines the wrapped nop_send): relay_send, not the runtime's nop_relay it called.
traced_nop "$TMP/relay.trace" env ACTORTRACE_STACKS=send "$PROG" 20 "$DL" relay >/dev/null 2>&1
"$ASAN_DECODE" --format stats --json -o "$TMP/relay.stats" "$TMP/relay.trace"
check "senders: stats decodes cleanly" [ $? -eq 0 ]
equal "senders: by function, the most first, with their share" \
    "$(jq -r '.senders.functions[] | "\(.function) (\(.module)) \(.sends) \(.share)"' "$TMP/relay.stats" | tr '\n' ',')" \
    "inner_send (stacks) 20 0.7143,relay_send (stacks) 5 0.1786,lib_inner (libstacklinked.so) 1 0.0357,lib_inner (libstackdl.so) 1 0.0357,on_signal (stacks) 1 0.0357,"
equal "senders: every send has a stack" "$(jq -c '[.senders.sends, .senders.with_stack]' "$TMP/relay.stats")" "[28,28]"
"$ASAN_DECODE" -o "$TMP/relay.jsonl" "$TMP/relay.trace"
equal "senders: the runtime's frame is in the stack, above the sender" \
    "$(jq -r 'select(.actor == 6) | .stack[0:2] | map(sub("\\+.*"; "")) | join(" ")' "$TMP/relay.jsonl" | sort -u)" \
    "nop_relay relay_send"
"$ASAN_DECODE" --format stats -o "$TMP/relay.txt" "$TMP/relay.trace"
check "senders: the text report's rows" sh -c "grep -A3 '^Top senders' '$TMP/relay.txt' | tail -n 2 |
    awk '{ print \$1, \$2, \$3, \$4 }' | tr '\n' , | grep -qx 'inner_send (stacks) 20 71.4%,relay_send (stacks) 5 17.9%,'"

# A module path of 150 components: their interned strings' iids pass 127 within one Mapping.
deep="$TMP/deep$(printf '/d%.0s' $(seq 150))"
mkdir -p "$deep" && cp "$DL" "$deep/"
traced_nop "$TMP/deep.trace" env ACTORTRACE_STACKS=send "$PROG" 1 "$deep/libstackdl.so" >/dev/null 2>&1
"$ASAN_DECODE" --format perfetto -o "$TMP/deep.pftrace" "$TMP/deep.trace"
"$ASAN_DECODE" -o "$TMP/deep.jsonl" "$TMP/deep.trace"
protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_min.proto" \
    <"$TMP/deep.pftrace" >"$TMP/deep.pf.txt" 2>&1
check "perfetto: a deep module path decodes" [ $? -eq 0 ]
equal "perfetto: the deep path's components" \
    "$(grep -c '^      str: "d"$' "$TMP/deep.pf.txt")" 150
jsonl_stacks "$TMP/deep.jsonl" >"$TMP/deep.stacks"
pf_stacks "$TMP/deep.pftrace" >"$TMP/deep.pf.stacks"
equal "perfetto: stacks through the deep module read as JSONL's" \
    "$(wc -l <"$TMP/deep.pf.stacks"),$(cmp -s "$TMP/deep.stacks" "$TMP/deep.pf.stacks" && echo same)" "4,same"

run every 100 ACTORTRACE_STACKS=send ACTORTRACE_STACK_EVERY=4
# 103 sends on one thread: the 1st, 5th, ... carry a stack
equal "every 4: the share of sends with a stack" "$(with_stack "$TMP/every.jsonl")" 26
equal "every 4: every send recorded" "$(kind_count "$TMP/every.jsonl" send)" 103
"$ASAN_DECODE" --format stats --json -o "$TMP/every.stats" "$TMP/every.trace"
equal "every 4: top senders count the sampled sends" \
    "$(jq -c '[.senders.sends, .senders.with_stack, (.senders.functions | map(.sends) | add)]' "$TMP/every.stats")" \
    "[103,26,26]"

run depth 3 ACTORTRACE_STACKS=all ACTORTRACE_STACK_DEPTH=2
equal "depth 2: two frames" "$(frames "$TMP/depth.jsonl" 1 9)" "inner_send (stacks) middle_send (stacks) "

run spawn 3 ACTORTRACE_STACKS=spawn
equal "spawn only: sends have none" "$(with_stack "$TMP/spawn.jsonl")" 0

ACTORTRACE_STACKS=send,bogus traced_nop "$TMP/bad.trace" "$PROG" 1 "$DL" >/dev/null 2>"$TMP/bad.err"
check "an unknown kind is reported" grep -q 'ACTORTRACE_STACKS: bogus is not an event kind' "$TMP/bad.err"

# A stripped copy, removed before decoding: the program's frames are module + offset, the
# libraries' still named, from what the trace holds alone.
mkdir -p "$TMP/bin"
cp "$PROG" "$TMP/bin/stacks"
strip --strip-all "$TMP/bin/stacks"
ACTORTRACE_STACKS=send LD_LIBRARY_PATH="$B/tests/stacks:$B/bench" \
    traced_nop "$TMP/stripped.trace" "$TMP/bin/stacks" 1 "$DL" >/dev/null 2>&1
rm -rf "$TMP/bin"
"$DECODE" -o "$TMP/stripped.jsonl" "$TMP/stripped.trace"
check "stripped: decodes" [ $? -eq 0 ]
equal "stripped: the program's frames are offsets in it" \
    "$(jq -r 'select(.actor == 1) | .stack[0:4][]' "$TMP/stripped.jsonl" |
        grep -cE '^0x[0-9a-f]+ \(stacks\)$')" 4
equal "stripped: the library's frames keep their names" "$(frames "$TMP/stripped.jsonl" 2 2)" \
    "lib_inner (libstacklinked.so) stacklinked_send (libstacklinked.so) "

# A SIGALRM storm while chain 1 sends: a handler that interrupts a capture on its thread skips
# its own ("stack":null, "stack_skipped":true); every other send keeps its stack, the one the
# handler interrupted included.
traced_nop "$TMP/storm.trace" env ACTORTRACE_STACKS=send "$PROG" 5000 "$DL" storm >/dev/null 2>&1
"$ASAN_DECODE" -o "$TMP/storm.jsonl" "$TMP/storm.trace"
check "storm: decodes cleanly" [ $? -eq 0 ]
s="$TMP/storm.jsonl"
echo "# storm: $(jq -c 'select(.actor == 5)' "$s" | wc -l) handler sends, $(grep -c stack_skipped "$s") skipped"
equal "storm: every send has a stack or says it was skipped" \
    "$(jq -c 'select(.event == "send" and (has("stack") | not))' "$s" | wc -l)" 0
equal "storm: the summary counts the skipped captures" "$(summary "$s" stacks_skipped)" \
    "$(grep -c stack_skipped "$s")"
equal "storm: a stack or a skip for every send" "$(summary "$s" stacks)" "$(kind_count "$s" send)"
equal "storm: only handlers skip" \
    "$(jq -c 'select(.stack_skipped and .actor != 5)' "$s" | wc -l)" 0
equal "storm: chain 1 keeps its stacks" \
    "$(jq -c 'select(.actor == 1 and .stack[0] != null and (.stack[0] | startswith("inner_send+")))' "$s" | wc -l)" 5000
equal "storm: the handler's own stacks name it" \
    "$(jq -c 'select(.actor == 5 and .stack != null and (.stack[0] | startswith("on_alarm+") | not))' "$s" | wc -l)" 0

# A SIGALRM every 20 us while the program spins 40 frames down in a function whose CFA is a
# DWARF expression, at the deepest stacks: libunwind walks a stack with such a frame through its
# slow path, about 1 us a frame, so a handler's capture that walked the interrupted frames
# would outlast the period and the program would never end. A handler's stack stops where its
# signal was delivered; the program ends, and every alarm it counts has its send and stack.
RUN_LIMIT=30 traced_nop "$TMP/expression.trace" env ACTORTRACE_STACKS=send ACTORTRACE_STACK_DEPTH=32 \
    "$PROG" 100000000 "$DL" expression >"$TMP/expression.out" 2>"$TMP/expression.err"
check "expression: the program ends" [ $? -eq 0 ]
"$ASAN_DECODE" -o "$TMP/expression.jsonl" "$TMP/expression.trace"
check "expression: decodes cleanly" [ $? -eq 0 ]
x="$TMP/expression.jsonl"
alarms=$(sed -n 's/^alarms //p' "$TMP/expression.out")
echo "# expression: ${alarms:-no} alarms"
equal "expression: a send for every alarm the program counted" "$(sends_of "$x" 5),$(summary "$x" dropped)" \
    "${alarms:-none},0"
equal "expression: every handler's stack is its own frames, down to the delivery" \
    "$(jq -c 'select(.actor == 5)' "$x" | jsonl_stacks /dev/stdin | sort | uniq -c | sed 's/^ *//')" \
    "${alarms:-none} on_alarm (stacks)"

# More distinct stacks than the table holds: 8192 paths down 13 levels of two call sites, each
# sent twice (block mode: the writer, busy naming stacks, must not cost events). The table keeps
# 4096, found again the second time; every other send says its capture was skipped, and the
# summary counts them.
traced_nop "$TMP/table.trace" env ACTORTRACE_STACKS=send ACTORTRACE_MODE=block "$PROG" 1 "$DL" table \
    >/dev/null 2>"$TMP/table.err"
check "table: runs traced" [ $? -eq 0 ]
check "table: nothing on stderr" [ ! -s "$TMP/table.err" ]
"$DECODE" -o "$TMP/table.jsonl" "$TMP/table.trace"
check "table: decodes cleanly" [ $? -eq 0 ]
t="$TMP/table.jsonl"
equal "table: every send, none dropped" "$(kind_count "$t" send),$(summary "$t" dropped)" "16384,0"
equal "table: 8192 sends keep a stack" "$(jq -c 'select(.stack)' "$t" | wc -l)" 8192
equal "table: 8192 say their capture was skipped" \
    "$(jq -c 'select(.stack_skipped and .stack == null)' "$t" | wc -l)" 8192
equal "table: the second time down a path finds what the first did" \
    "$(jq -c 'select(.event == "send") | .stack != null' "$t" | awk '{ k[NR % 8192] = k[NR % 8192] $0 }
        END { for (i in k) n[k[i]]++; for (v in n) print v, n[v] }' | sort | tr '\n' ,)" \
    "falsefalse 4096,truetrue 4096,"
equal "table: the kept stacks are 4096 distinct ones" "$(jq -c 'select(.stack) | .stack' "$t" | sort -u | wc -l)" 4096
equal "table: the summary counts them" "$(summary "$t" stacks),$(summary "$t" stacks_skipped)" "16384,8192"
equal "table: a kept stack goes down the 13 levels" \
    "$(jq -r 'select(.stack) | .stack[0:15] | map(sub("\\+.*"; "")) | join(" ")' "$t" | sort -u)" \
    "$(printf 'branch %.0s' $(seq 14))main"
"$DECODE" --format perfetto -o "$TMP/table.pftrace" "$TMP/table.trace"
protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_min.proto" \
    <"$TMP/table.pftrace" >/dev/null 2>"$TMP/table.pf.err"
check "table: protoc decodes the Perfetto output without a complaint" [ ! -s "$TMP/table.pf.err" ]
jsonl_stacks "$t" >"$TMP/table.stacks"
pf_stacks "$TMP/table.pftrace" >"$TMP/table.pf.stacks"
check "table: Perfetto's callstacks read as JSONL's stacks" cmp -s "$TMP/table.stacks" "$TMP/table.pf.stacks"
"$DECODE" --format stats -o "$TMP/table.stats" "$TMP/table.trace"
check "table: stats says how many were skipped" grep -q '^call stacks on 8192 events (8192 skipped)$' "$TMP/table.stats"

# A forked child's trace names the stacks it uses, the ones captured before the fork included.
mkdir -p "$TMP/fork"
ACTORTRACE_STACKS=send traced_nop "$TMP/fork/t-%p.trace" "$B/tests/progs/forker" fork 5 >/dev/null 2>&1
for f in "$TMP"/fork/t-*.trace; do
    "$DECODE" "$f" >"$f.jsonl" 2>/dev/null
    equal "fork: every send of $(basename "$f") has a named stack" \
        "$(jq -c 'select(.event == "send" and (.stack[0] // "" | test("^[a-z_]+\\+0x")))' "$f.jsonl" | wc -l)" \
        "$(kind_count "$f.jsonl" send)"
done
equal "fork: two traces" "$(ls "$TMP"/fork/t-*.trace | wc -l)" 2
"$ASAN_DECODE" --format stats --json -o "$TMP/fork.stats" "$TMP"/fork/t-*.trace
equal "fork: top senders of both processes, each send counted once" \
    "$(jq -c '[.senders.sends == .senders.with_stack, .senders.sends == (.senders.functions | map(.sends) | add),
        (.senders.functions | map(.pid) | unique | length)]' "$TMP/fork.stats")" "[true,true,2]"

# A thread with little stack left (tests/targets/progs/stack_room): a 64 KiB thread that has used 58
# KiB sends 10 times with stacks on. A capture needs more than that (4.4 to 9.4 KiB measured,
# docs/STACKS.md): it is skipped and counted, the sends are recorded, the program runs as
# untraced (before: SIGSEGV). The main thread's 11 sends keep their stacks.
ROOM="$B/tests/progs/stack_room"
"$ROOM" deep 64 58 10 main_first >"$TMP/thin.plain" 2>&1
check "thin stack: runs untraced" [ $? -eq 0 ]
timeout -s KILL 60 env ACTORTRACE_OUT="$TMP/thin.trace" ACTORTRACE_STACKS=send \
    LD_PRELOAD="$LIB_NOP" "$ROOM" deep 64 58 10 main_first >"$TMP/thin.out" 2>"$TMP/thin.err"
equal "thin stack: runs traced with stacks" "$?" 0
"$DECODE" -o "$TMP/thin.jsonl" "$TMP/thin.trace" 2>/dev/null
equal "thin stack: every send" "$(kind_count "$TMP/thin.jsonl" send)" 21
equal "thin stack: the thin thread's captures skipped" "$(summary "$TMP/thin.jsonl" stacks_skipped)" 10
equal "thin stack: the thin thread's sends marked" \
    "$(jq -c 'select(.event == "send" and .actor == 1 and .stack_skipped)' "$TMP/thin.jsonl" | wc -l)" 10
equal "thin stack: the main thread's sends have their stacks" \
    "$(jq -c 'select(.event == "send" and .actor != 1 and (.stack | length) > 0)' "$TMP/thin.jsonl" | wc -l)" 11
