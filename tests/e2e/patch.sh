#!/bin/sh
# Entry patching (docs/PATCHING.md): refrt linked into the programs as a static archive, where
# LD_PRELOAD alone sees nothing, and built -Bsymbolic-functions, where it sees only the program's
# calls, traced through patched entries exactly as the shared build is traced through the PLT;
# the trace says what was patched and what was refused; ACTORTRACE_PATCH=0 turns it off; a
# stripped program says so in one line and runs untraced, its exit status unchanged.
. "$(dirname "$0")/../lib.sh"
S="$B/static"

# every check of refrt.sh (each event kind = ground truth, order, names, output unchanged) on
# the examples linked against librefrt.a without -rdynamic (the functions are in .symtab only)
REFRT_EXAMPLES="$S" sh "$TOP/tests/e2e/refrt.sh" | sed 's/^\(not \)\{0,1\}ok - /&static: /'

# librefrt.so built -Bsymbolic-functions: the runtime's calls to its own functions are direct,
# seen only through the patched entries; the same checks, the examples run against it
LD_LIBRARY_PATH="$B/symbolic" sh "$TOP/tests/e2e/refrt.sh" | sed 's/^\(not \)\{0,1\}ok - /&symbolic: /'
# without patching they are not seen; with the library found by a relative path, they are
(cd "$B" && LD_LIBRARY_PATH=symbolic ACTORTRACE_PATCH=0 traced "$TMP/sy0.trace" \
    examples/pingpong 100 >/dev/null 2>&1)
"$DECODE" -o "$TMP/sy0.jsonl" "$TMP/sy0.trace"
equal "symbolic, ACTORTRACE_PATCH=0: the runtime's own sends are not seen" \
    "$(kind_count "$TMP/sy0.jsonl" send)" 0
(cd "$B" && LD_LIBRARY_PATH=symbolic traced "$TMP/sy.trace" examples/pingpong 100 \
    >"$TMP/sy.out" 2>&1)
"$DECODE" -o "$TMP/sy.jsonl" "$TMP/sy.trace"
equal "symbolic, found by a relative path: sends = ground truth" \
    "$(kind_count "$TMP/sy.jsonl" send)" "$(truth "$TMP/sy.out" send)"

counts_equal() { # counts_equal NAME JSONL OUTPUT: each event kind = the ground truth
    for kind in spawn send recv schedule park unpark exit; do
        equal "$1: $kind events = ground truth" "$(kind_count "$2" "$kind")" "$(truth "$3" "$kind")"
    done
    equal "$1: step_begin events = ground truth" "$(kind_count "$2" step_begin)" \
        "$(truth "$3" step)"
}

# ring with -rdynamic: the program exports the functions, ahead of the preloaded wrappers
traced "$TMP/rd.trace" "$S/ring-rdynamic" 16 500 >"$TMP/rd.out" 2>"$TMP/rd.err"
check "ring -rdynamic: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/rd.err" ]
"$DECODE" -o "$TMP/rd.jsonl" "$TMP/rd.trace"
counts_equal "ring -rdynamic" "$TMP/rd.jsonl" "$TMP/rd.out"

# refrt (-Bsymbolic-functions) loaded by dlopen, called through dlsym's pointers: patched
# before dlopen returns
traced "$TMP/dl.trace" "$S/dlopen" "$B/symbolic/librefrt.so" 2000 >"$TMP/dl.out" 2>"$TMP/dl.err"
check "dlopen: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/dl.err" ]
"$DECODE" -o "$TMP/dl.jsonl" "$TMP/dl.trace"
counts_equal "dlopen" "$TMP/dl.jsonl" "$TMP/dl.out"

# the same, by a bare name its DT_RUNPATH ($ORIGIN/../symbolic) finds: searched as untraced,
# and patched
traced "$TMP/dr.trace" "$S/dlopen-runpath" librefrt.so 2000 >"$TMP/dr.out" 2>"$TMP/dr.err"
check "dlopen by run path: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/dr.err" ]
check "dlopen by run path: the runtime ran" [ -n "$(truth "$TMP/dr.out" send)" ]
"$DECODE" -o "$TMP/dr.jsonl" "$TMP/dr.trace"
counts_equal "dlopen by run path" "$TMP/dr.jsonl" "$TMP/dr.out"

# dlopen from a program whose run path ($ORIGIN/a) holds one copy of a plugin and
# LD_LIBRARY_PATH or $ORIGIN/b the other: each answer (which copy, or dlerror's text) is the
# untraced one, under the product and the test copy
opens() { # opens NAME WANT LD_LIBRARY_PATH PROGRAM ARGS...: WANT, the copies loaded untraced
    local name=$1 want=$2 libpath=$3
    shift 3
    LD_LIBRARY_PATH=$libpath "$@" >"$TMP/op.plain" 2>&1
    equal "dlopen $name: untraced" "$(awk -F', ' '{printf "%s ", $2}' "$TMP/op.plain")" "$want "
    for lib in "$PRODUCT_LIB" "$LIB"; do
        limit env LD_LIBRARY_PATH=$libpath ACTORTRACE_OUT="$TMP/op.trace" LD_PRELOAD="$lib" "$@" \
            >"$TMP/op.out" 2>&1
        check "dlopen $name: as untraced with $(basename "$lib")" cmp -s "$TMP/op.plain" "$TMP/op.out"
    done
}
P="$B/patch"
opens "bare name, DT_RUNPATH" a "" "$P/opener-runpath" libplugin.so
opens "bare name, LD_LIBRARY_PATH before DT_RUNPATH" b "$P/b" "$P/opener-runpath" libplugin.so
opens "bare name, DT_RPATH before LD_LIBRARY_PATH" a "$P/b" "$P/opener-rpath" libplugin.so
opens "\$ORIGIN, then a bare name matching its soname" "b b b" "" "$P/opener-runpath" \
    '$ORIGIN/b/libplugin.so' libplugin.so noload:libplugin.so
opens "RTLD_NOLOAD, missing files, NULL" "no plugin_which no plugin_which no plugin_which no plugin_which" \
    "" "$P/opener-rpath" noload:libplugin.so '${ORIGIN}/c/libplugin.so' libmissing.so -
opens "a path relative to the working directory" a "" sh -c "cd '$P' && ./opener-runpath ./a/libplugin.so"

# the summary lists the nine functions of shim/refrt.c's table, patched in the program
traced "$TMP/pp.trace" "$S/pingpong" 100 >/dev/null 2>&1
"$DECODE" -o "$TMP/pp.jsonl" "$TMP/pp.trace"
equal "summary lists each patched function once, in the program" "$(tail -n 1 "$TMP/pp.jsonl" |
    jq -r --arg exe "$S/pingpong" '[.patches[] | select(.patched and .object == $exe) | .symbol]
        | sort | join(" ")')" \
    "rt_exit rt_msg_type rt_park rt_receive rt_schedule rt_send rt_spawn rt_step rt_unpark"
# the shared build is reached through the PLT: nothing to patch, nothing said
traced "$TMP/sh.trace" "$B/examples/pingpong" 100 >/dev/null 2>&1
"$DECODE" -o "$TMP/sh.jsonl" "$TMP/sh.trace"
equal "shared build: nothing patched" "$(tail -n 1 "$TMP/sh.jsonl" | jq -c .patches)" null

# ACTORTRACE_PATCH=0: the static program runs as if untraced, records nothing
ACTORTRACE_PATCH=0 traced "$TMP/off.trace" "$S/pingpong" 100 >/dev/null 2>"$TMP/off.err"
check "ACTORTRACE_PATCH=0: runs, silent" [ $? -eq 0 -a ! -s "$TMP/off.err" ]
check "ACTORTRACE_PATCH=0: no trace" [ ! -e "$TMP/off.trace" ]

# stripped: one line that says why, no trace, the same output and exit status as untraced
for args in 100 not-a-number; do
    "$S/pingpong-stripped" $args 2>/dev/null | grep -v ground_truth >"$TMP/plain.out"
    limit "$S/pingpong-stripped" $args >/dev/null 2>&1
    plain=$?
    traced "$TMP/strip.trace" "$S/pingpong-stripped" $args >"$TMP/strip.full" 2>"$TMP/strip.err"
    equal "stripped ($args): exit status unchanged" $? $plain
    grep -v ground_truth "$TMP/strip.full" >"$TMP/strip.out"
    equal "stripped ($args): one line on stderr says it is stripped" \
        "$(grep -c 'actortrace: .*stripped.*untraced' "$TMP/strip.err")/$(grep -c actortrace "$TMP/strip.err")" 1/1
    check "stripped ($args): no trace" [ ! -e "$TMP/strip.trace" ]
    # but for the ground truth line, whose park and unpark counts vary from run to run
    check "stripped ($args): output unchanged" cmp -s "$TMP/plain.out" "$TMP/strip.out"
done

# a stripped program the system installed (a traced program's child, often) is not worth a line
limit env ACTORTRACE_OUT="$TMP/sys.trace" LD_PRELOAD="$PRODUCT_LIB" /bin/true 2>"$TMP/sys.err"
check "stripped /bin/true: nothing said" [ $? -eq 0 -a ! -s "$TMP/sys.err" ]

# a function too short to patch: refused, said once on stderr and in the trace, and it still
# runs; the other function of the program is patched and traced
traced "$TMP/ref.trace" "$S/refused" >"$TMP/ref.out" 2>"$TMP/ref.err"
# 21006: the sum of what rt_send saw; 0: no mapping is writable and executable
check "refused: runs, its output unchanged, no page writable and executable" \
    [ $? -eq 0 -a "$(cat "$TMP/ref.out")" = "21006 0" ]
equal "refused: one line on stderr names the function and why" \
    "$(grep -c 'not patching rt_exit in .*refused: its 1 bytes are fewer than the jump needs' \
        "$TMP/ref.err")/$(wc -l <"$TMP/ref.err")" 1/1
"$DECODE" -o "$TMP/ref.jsonl" "$TMP/ref.trace"
equal "refused: the patched function's calls are traced" "$(kind_count "$TMP/ref.jsonl" send)" 3
equal "refused: the summary says what was patched and what was refused, and why" \
    "$(tail -n 1 "$TMP/ref.jsonl" | jq -c '.patches | sort_by(.symbol) | map([.symbol, .patched, .why])')" \
    '[["rt_exit",false,"its 1 bytes are fewer than the jump needs"],["rt_send",true,null]]'

# The Aether stand-in linked into its programs, as Aether's default build links its runtime:
# traced with the product through patched entries exactly as the shared build is through the
# PLT. Each event kind equals the runtime's own count (park and unpark vary from run to run) and
# the shared build's, and so do the sends counted by path and sender.
ae_events() { # ae_events JSONL: the events but parks, by kind, and the sends by path and sender
    jq -r 'select(.event and .event != "park" and .event != "unpark")
        | if .event == "send" then "send \(.path) \(.sender)" else .event end' "$1" | sort | uniq -c
}
ae_traced() { # ae_traced NAME BUILD PROGRAM ARGS...: $TMP/NAME.BUILD.{out,err,jsonl,events}
    local f="$TMP/$1.$2"
    shift 2
    limit env ACTORTRACE_OUT="$f.trace" LD_PRELOAD="$PRODUCT_LIB" "$@" >"$f.out" 2>"$f.err"
    "$DECODE" -o "$f.jsonl" "$f.trace"
    ae_events "$f.jsonl" >"$f.events"
}
aether_static() { # aether_static NAME STATIC-PROGRAM ARGS...: NAME the shared build's program
    local name=$1 prog=$2 kind
    shift 2
    local label="aether static $(basename "$prog")" f="$TMP/$(basename "$prog")"
    "$prog" "$@" 2>&1 | grep -v '^{"ground_truth"' >"$f.plain"
    ae_traced "$name" shared "$B/tests/aether/$name" "$@"
    ae_traced "$(basename "$prog")" static "$prog" "$@"
    local j="$f.static.jsonl" out="$f.static.out"
    check "$label: nothing on stderr" [ ! -s "$f.static.err" ]
    equal "$label: output unchanged" "$(grep -v '^{"ground_truth"' "$out")" "$(cat "$f.plain")"
    equal "$label: the ten functions are patched in the program" "$(tail -n 1 "$j" |
        jq --arg exe "$prog" '[.patches[] | select(.patched and .object == $exe)] | length')" 10
    for kind in send spawn exit reply park; do
        equal "$label: $kind = the runtime's" "$(kind_count "$j" $kind)" "$(truth "$out" $kind)"
    done
    equal "$label: step_begin = the runtime's steps" "$(kind_count "$j" step_begin)" \
        "$(truth "$out" step)"
    equal "$label: unpark = park" "$(kind_count "$j" unpark)" "$(kind_count "$j" park)"
    check "$label: each kind, and the sends by path and sender, as the shared build" \
        cmp -s "$f.static.events" "$TMP/$name.shared.events"
}
aether_static pingpong "$S/aether/pingpong" 5000
aether_static forkjoin "$S/aether/forkjoin" 8 500
aether_static ask "$S/aether/ask" 500
aether_static single "$S/aether/single" 2000
# linked -rdynamic, as ae links: the functions are in .dynsym too, ahead of the wrappers
aether_static pingpong "$S/aether/pingpong-rdynamic" 5000
