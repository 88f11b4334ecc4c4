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

# the same stripped: no .symtab, the functions found in .dynsym
traced "$TMP/rs.trace" "$S/ring-rdynamic-stripped" 16 500 >"$TMP/rs.out" 2>"$TMP/rs.err"
check "ring -rdynamic stripped: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/rs.err" ]
"$DECODE" -o "$TMP/rs.jsonl" "$TMP/rs.trace"
counts_equal "ring -rdynamic stripped" "$TMP/rs.jsonl" "$TMP/rs.out"
# with a library that has no shim for it, it records nothing; its exported functions were
# searched all the same, so it is not said to be out of sight
ACTORTRACE_OUT="$TMP/rn.trace" LD_PRELOAD="$PRODUCT_LIB" "$S/ring-rdynamic-stripped" 4 10 \
    >/dev/null 2>"$TMP/rn.err"
check "ring -rdynamic stripped, no shim for it: nothing said" [ ! -s "$TMP/rn.err" ]

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

# the summary lists the nine functions of refrt's shim's table (refrt.spec), patched in the program
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
# a panic leaves a step by _longjmp, which the program calls through its own PLT
aether_static panic "$S/aether/panic" main
rm -f "$TMP"/panic.* # the same names again
aether_static panic "$S/aether/panic" worker
# linked -rdynamic, as ae links: the functions are in .dynsym too, ahead of the wrappers
aether_static pingpong "$S/aether/pingpong-rdynamic" 5000

# A patched entry leaves its caller what the untraced call leaves. rt_schedule in the same unit
# as its caller's loop, built -O2 (-fipa-ra): the loop's counter stays in a call-clobbered
# register across the calls (docs/PATCHING.md, "Registers")
P="$B/patch"
"$P/ipara" 1000 >"$TMP/ip.plain"
ACTORTRACE_OUT="$TMP/ip.trace" LD_PRELOAD="$LIB" timeout 20 "$P/ipara" 1000 >"$TMP/ip.out" 2>&1
check "-fipa-ra caller: ends" [ $? -eq 0 ]
check "-fipa-ra caller: output as untraced" cmp -s "$TMP/ip.plain" "$TMP/ip.out"
"$DECODE" -o "$TMP/ip.jsonl" "$TMP/ip.trace" 2>/dev/null
equal "-fipa-ra caller: schedule events = calls" "$(kind_count "$TMP/ip.jsonl" schedule)" \
    "$(truth "$TMP/ip.plain" schedule)"
equal "-fipa-ra caller: rt_schedule, which calls nothing, goes through the stub" \
    "$(tail -n 1 "$TMP/ip.jsonl" | jq -c '.patches | map(select(.symbol == "rt_schedule") | .direct)')" \
    '[null]'
# Direct entries: a function that makes a call no compiler sees into (through a pointer, through
# the PLT, itself or in a function it calls) leaves no caller anything in a call-clobbered
# register, so its entry goes to the wrapper without the stub; ACTORTRACE_PATCH=stub sends every
# entry through the stub. The calls are traced alike either way.
"$P/direct" 1000 >"$TMP/di.plain"
for how in direct stub; do
    if [ $how = stub ]; then set -- ACTORTRACE_PATCH=stub; else set --; fi
    env "$@" ACTORTRACE_OUT="$TMP/di-$how.trace" LD_PRELOAD="$LIB" timeout 20 "$P/direct" 1000 \
        >"$TMP/di-$how.out" 2>&1
    check "$how entries: ends" [ $? -eq 0 ]
    check "$how entries: output as untraced" cmp -s "$TMP/di.plain" "$TMP/di-$how.out"
    "$DECODE" -o "$TMP/di-$how.jsonl" "$TMP/di-$how.trace" 2>/dev/null
    for kind in send schedule park; do
        equal "$how entries: $kind events = calls" "$(kind_count "$TMP/di-$how.jsonl" $kind)" \
            "$(truth "$TMP/di.plain" $kind)"
    done
done
equal "direct entries: rt_send (a call through a pointer) and rt_schedule (getpid through the PLT, one call deep) are direct; rt_park (no call) is not" \
    "$(tail -n 1 "$TMP/di-direct.jsonl" | jq -c '.patches | sort_by(.symbol) | map([.symbol, .direct])')" \
    '[["rt_park",null],["rt_schedule",true],["rt_send",true]]'
equal "ACTORTRACE_PATCH=stub: no entry is direct" \
    "$(tail -n 1 "$TMP/di-stub.jsonl" | jq -c '[.patches[] | select(.direct)] | length')" 0
# every general call-clobbered register, the flags and the vector state (up to zmm and the mask
# registers, as the machine has them) loaded with patterns before a call to an rt_park that
# writes none: all found unchanged after each of 300 calls, traced as untraced
"$P/regs" 300 >"$TMP/rg.plain" 2>&1
check "registers: untraced, none changed" [ $? -eq 0 ]
ACTORTRACE_OUT="$TMP/rg.trace" LD_PRELOAD="$LIB" timeout 20 "$P/regs" 300 >"$TMP/rg.out" 2>&1
rc=$?
check "registers: traced, none changed: $(head -n 1 "$TMP/rg.out")" [ $rc -eq 0 ]
"$DECODE" -o "$TMP/rg.jsonl" "$TMP/rg.trace" 2>/dev/null
equal "registers: park events = calls" "$(kind_count "$TMP/rg.jsonl" park)" \
    "$(truth "$TMP/rg.plain" park)"
# the same where the wrapper's call takes the recorder's slow paths, which run C library code
# and save the vector state themselves (include/at_vectors.h): 4 KiB blocks (a block handed
# over every 128 events), a stack captured at every park, and rseq not registered (the CPU
# number asked on every event)
for slow in ACTORTRACE_BLOCK_KB=4 ACTORTRACE_STACKS=park GLIBC_TUNABLES=glibc.pthread.rseq=0; do
    env "$slow" ACTORTRACE_OUT="$TMP/rk.trace" LD_PRELOAD="$LIB" timeout 20 "$P/regs" 3000 \
        >"$TMP/rk.out" 2>&1
    rc=$?
    check "registers, $slow: none changed: $(head -n 1 "$TMP/rk.out")" [ $rc -eq 0 ]
    "$DECODE" -o "$TMP/rk.jsonl" "$TMP/rk.trace" 2>/dev/null
    equal "registers, $slow: park events = calls" "$(kind_count "$TMP/rk.jsonl" park)" 3000
    rm -f "$TMP/rk.trace"
done
# the same with a timer's handler calling rt_park every 200 us, in the middle of the calls and
# of their way in and out of the wrapper: every call recorded, no register changed
ACTORTRACE_OUT="$TMP/rsig.trace" LD_PRELOAD="$LIB" timeout 30 "$P/regs" 2000 signals \
    >"$TMP/rsig.out" 2>&1
rc=$?
check "registers, handlers calling in between: none changed: $(head -n 1 "$TMP/rsig.out")" \
    [ $rc -eq 0 ]
"$DECODE" -o "$TMP/rsig.jsonl" "$TMP/rsig.trace" 2>/dev/null
equal "registers, handlers calling in between: park events = calls" \
    "$(kind_count "$TMP/rsig.jsonl" park)" "$(truth "$TMP/rsig.out" park)"
# rt_step recursing 300 deep through its patched entry, then 3000 longjmps out of rt_schedule's
# original (each leaves a stale frame on the shadow stack, which holds 1024), then 1000 calls
shadow() { # shadow DEPTH JUMPS: runs shadow traced; checks the schedules; $TMP/sh.{out,err,jsonl}
    ACTORTRACE_OUT="$TMP/sh$1.trace" LD_PRELOAD="$LIB" timeout 20 "$P/shadow" "$@" >"$TMP/sh.out" \
        2>"$TMP/sh.err"
    check "shadow stack ($*): runs traced" [ $? -eq 0 ]
    "$DECODE" -o "$TMP/sh.jsonl" "$TMP/sh$1.trace" 2>/dev/null
    equal "shadow stack ($*): schedule events = calls" "$(kind_count "$TMP/sh.jsonl" schedule)" \
        "$(truth "$TMP/sh.out" schedule)"
}
shadow 300 3000
equal "shadow stack (300 3000): step_begin events = calls, nothing said" \
    "$(kind_count "$TMP/sh.jsonl" step_begin) $(cat "$TMP/sh.err")" "$(truth "$TMP/sh.out" step) "
# deeper than the shadow stack: the calls past 1024 run untraced, and are counted
shadow 1100 30
equal "shadow stack (1100 30): the 77 calls past 1024 deep counted" "$(cat "$TMP/sh.err")" \
    "actortrace: 77 calls of patched functions, nested deeper than the 1024 the shadow stack\
 holds, ran untraced"
equal "shadow stack (1100 30): the others traced" "$(kind_count "$TMP/sh.jsonl" step_begin)" 1024

# rt_unpark an alias of rt_park: one address, patched once, each call recorded once
ACTORTRACE_OUT="$TMP/al.trace" LD_PRELOAD="$LIB" timeout 5 "$P/alias" >"$TMP/al.out" 2>"$TMP/al.err"
check "alias: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/al.err" ]
[ -s "$TMP/al.out" ] && "$DECODE" -o "$TMP/al.jsonl" "$TMP/al.trace" 2>/dev/null ||
    : >"$TMP/al.jsonl"
equal "alias: park and unpark events = calls" \
    "$(($(kind_count "$TMP/al.jsonl" park) + $(kind_count "$TMP/al.jsonl" unpark)))" \
    "$(truth "$TMP/al.out" park_or_unpark)"
equal "alias: patched once, the other name refused as the same code" "$(tail -n 1 "$TMP/al.jsonl" |
    jq -c '[.patches[]? | select(.object | endswith("/alias")) | .patched]')" '[true,false]'

# Threads run rt_schedule (libspin.so, patched at start) while plugins defining rt_park,
# rt_unpark and rt_exit are patched inside dlopen, 25 ms in, each write of code made 5 ms longer
# (the test copy's ACTORTRACE_TEST_PATCH_DELAY_MS); one more thread, started by libspin.so's
# constructor before the tracer's, runs rt_schedule while it is patched: no run of 10 may fail,
# the plugins' calls are traced, and so are the calls of all five threads
bad=0
for i in $(seq 10); do
    ACTORTRACE_TEST_PATCH_DELAY_MS=5 ACTORTRACE_OUT="$TMP/dr$i.trace" LD_PRELOAD="$LIB" timeout 20 \
        "$P/dlrace" "$P/plug-rt_park.so" "$P/plug-rt_unpark.so" "$P/plug-rt_exit.so" \
        >"$TMP/dr.out" 2>&1 || bad=$((bad + 1))
done
equal "dlopen while threads run patched code: runs of 10 that failed" $bad 0
"$DECODE" -o "$TMP/dr.jsonl" "$TMP/dr10.trace" 2>/dev/null
equal "dlopen while threads run patched code: the plugins' calls traced" \
    "$(($(kind_count "$TMP/dr.jsonl" park) + $(kind_count "$TMP/dr.jsonl" unpark) + \
    $(kind_count "$TMP/dr.jsonl" exit)))" 30
equal "dlopen while threads run patched code: the five threads' schedules traced" \
    "$(jq -s '[.[] | select(.event == "schedule") | .tid] | unique | length' "$TMP/dr.jsonl")" 5

# Plugins patched inside dlopen on one thread (50 copies of one, each a new object) while the
# main thread loads and unloads another library: no lock may be taken in the order opposite
# to glibc's (dlsym inside dl_iterate_phdr hung 10 runs in 12). 10 runs, each must end.
for i in $(seq 50); do cp "$P/plug-rt_park.so" "$TMP/cross$i.so"; done
bad=0
for i in $(seq 10); do
    ACTORTRACE_OUT="$TMP/cross$i.trace" LD_PRELOAD="$LIB" timeout -s KILL 20 "$P/dlcross" \
        "$P/a/libplugin.so" $(seq -f "$TMP/cross%g.so" 50) >"$TMP/cross.out" 2>"$TMP/cross.err" ||
        bad=$((bad + 1))
done
equal "dlopen on one thread, dlclose on another: runs of 10 that hung or failed" $bad 0
equal "dlopen on one thread, dlclose on another: every plugin seen by the patching" \
    "$(grep -c 'not patching rt_park in .*/cross[0-9]*[.]so: already patched' "$TMP/cross.err")" 49

# A function whose rare path, apart in its own section as GCC puts name.cold, jumps back to
# just past its entry: the jump written there would cut that target in two (before: SIGILL).
# It is left alone, and says why.
ACTORTRACE_OUT="$TMP/cold.trace" LD_PRELOAD="$LIB" timeout -s KILL 20 "$P/coldjump" \
    >"$TMP/cold.out" 2>"$TMP/cold.err"
equal "a .cold part jumping into the entry: exit status as untraced" $? 0
check "a .cold part jumping into the entry: every call made" grep -qx "parked 20" "$TMP/cold.out"
check "a .cold part jumping into the entry: refused, and why" grep -q \
    "not patching rt_park in .*coldjump: a jump from outside it (a .cold part) goes to +1" \
    "$TMP/cold.err"

# A plugin patched inside dlopen while its own thread calls the function, the test copy waiting
# 50 ms after each store into code: the wrapper, reached at once through the new entry, finds
# the function to forward to (before, it found none: 3 runs in 3 died of SIGSEGV). 5 runs.
bad=0
for i in $(seq 5); do
    ACTORTRACE_TEST_PATCH_DELAY_MS=50 ACTORTRACE_OUT="$TMP/spin$i.trace" LD_PRELOAD="$LIB" \
        timeout -s KILL 20 "$P/spinload" "$P/spinplug.so" >"$TMP/spin.out" 2>&1 || bad=$((bad + 1))
done
equal "dlopen of a plugin whose thread runs the function patched: runs of 5 that failed" $bad 0

# A patched plugin unloaded, then loaded again by a library that calls its function through
# its PLT, which the preloaded wrapper serves: the wrapper reaches the copy loaded now (before,
# it jumped into the unloaded code: SIGILL), and the new copy is patched too.
(cd "$P" && ACTORTRACE_OUT="$TMP/reload.trace" LD_PRELOAD="$LIB" timeout -s KILL 20 ./reload \
    ./plug-rt_park.so ./libparkcaller.so >"$TMP/reload.out" 2>"$TMP/reload.err")
equal "a patched plugin unloaded and loaded again: exit status" $? 0
check "a patched plugin unloaded and loaded again: nothing on stderr" [ ! -s "$TMP/reload.err" ]
"$DECODE" -o "$TMP/reload.jsonl" "$TMP/reload.trace" 2>/dev/null
equal "a patched plugin unloaded and loaded again: every call traced" \
    "$(kind_count "$TMP/reload.jsonl" park)" 20
# A stack captured inside a wrapper reached through a patched entry goes on to the caller: the
# return into the stub has call frame information (every send of the Aether stand-in linked in
# has a stack, whose first frame is in the program)
ACTORTRACE_STACKS=send ACTORTRACE_OUT="$TMP/st.trace" LD_PRELOAD="$PRODUCT_LIB" \
    timeout 20 "$S/aether/pingpong" 200 >/dev/null 2>&1
"$DECODE" -o "$TMP/st.jsonl" "$TMP/st.trace" 2>/dev/null
equal "stacks through patched entries: every send's stack starts in the program" \
    "$(jq -r 'select(.event == "send") | .stack[0] // "none" | test("[(]pingpong[)]$")' \
        "$TMP/st.jsonl" | sort | uniq -c | awk '{print $2, $1}')" "true 401"
