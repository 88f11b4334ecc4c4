#!/bin/sh
# Real programs, traced as users trace them (the default settings), against the floor F measured
# in the same run (hotpath --floor: one rdtsc and a 16-byte store), each figure in units of F.
# A pair is one untraced run, one traced with the library and one traced with its floor variant
# (build/bench/floor: the same shims, each event one rdtsc and a 16-byte store, no writer), in
# an order that turns from pair to pair, so that all three see the same background load, with
# one F measured beside them. PAIRS pairs (51 unless set); the figures are medians over the
# pairs, with the middle half of the pairs in brackets. For each program:
#   wall      the whole process's wall time, traced / untraced, and the floor variant's
#   program   the CPU time the program's own threads gain per event: all threads' CPU time
#             (user + system) traced, minus the writer's, minus the untraced run's
#   writer    the writer thread's CPU time per event (libthreadcpu.so)
#   bytes     the trace's bytes per event
#   instr     the instructions the tracer adds per event on the program's threads: those run in
#             its own code (the library, a generated shim; their calls into other libraries not
#             included), counted by callgrind thread by thread (perf stat counts all threads
#             together, and this VM counts none), the writer's thread left out, on two smaller
#             runs, one doing twice the other's work, so that start-up and exit cancel. The
#             program's own instructions are left out because its threads' spinning and waiting
#             vary from run to run by more than the tracer adds. Not moved by the load.
#   phases    the writer's CPU time per event by what it does, in PHASE_RUNS traced runs (5
#             unless set) with the library's copy that times them (build/bench/phases/,
#             AT_BENCH_PHASES in preload/writer.c): encoding the events, packing them (zstd),
#             growing the ring, writing, clearing freed blocks, and the rest (waking, claiming
#             blocks, metadata, start and end)
# Events are those of the traced run's trace; the floor variant's runs are credited with the
# same number. Run by tests/bench/run.sh; runs alone too: PAIRS=5 sh tests/bench/programs.sh
. "$(dirname "$0")/lib.sh"

PAIRS=${PAIRS:-51}
PHASE_RUNS=${PHASE_RUNS:-5}
FLOOR_CALLS=2000000
THREADCPU="$B/bench/libthreadcpu.so"

timed() { # timed OUT PRELOAD COMMAND...: appends "wall_ns cpu_ns" (all threads) to OUT
    local out=$1 preload=$2
    shift 2
    LD_PRELOAD="$preload" bash -c 'TIMEFORMAT="%3R %3U %3S"; { time "$@" >/dev/null 2>&1; } 2>&1' \
        timed "$@" | awk '{ printf "%d %d\n", $1 * 1e9, ($2 + $3) * 1e9 }' >>"$out"
}

traced() { # traced OUT LIB COMMAND...: appends "wall cpu writer events dropped bytes" to OUT
    local out=$1 lib=$2
    shift 2
    rm -f "$TMP/p.trace" "$TMP/p.writer"
    ACTORTRACE_OUT="$TMP/p.trace" THREADCPU_OUT="$TMP/p.writer" timed "$TMP/p.t" "$THREADCPU $lib" "$@"
    local stats
    stats=$("$B/tracedecode" -f stats --json "$TMP/p.trace" 2>/dev/null | jq -r '"\(.events) \(.dropped)"')
    echo "$(tail -n 1 "$TMP/p.t") $(cat "$TMP/p.writer" 2>/dev/null || echo 0) ${stats:-0 0}" \
        "$(stat -c %s "$TMP/p.trace" 2>/dev/null || echo 0)" >>"$out"
}

spread() { # spread: "median lo hi" of the numbers on standard input, lo-hi the middle half
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan nan nan"; exit } # row() says why instead
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        print m, v[int(NR / 4) + 1], v[NR - int(NR / 4)] }'
}

pairs() { # pairs LIB FLOOR_LIB COMMAND...: PAIRS lines "untraced | traced | floor | F" in $TMP/pairs
    local lib=$1 floorlib=$2 i side
    shift 2
    rm -f "$TMP/pairs"
    for i in $(seq "$PAIRS"); do
        rm -f "$TMP/u" "$TMP/t" "$TMP/f"
        for side in $(echo u t f u t | cut -d ' ' -f "$((i % 3 + 1))-$((i % 3 + 3))"); do
            case $side in
            u) timed "$TMP/u" "" "$@" ;;
            t) traced "$TMP/t" "$lib" "$@" ;;
            f) timed "$TMP/f" "$floorlib" "$@" ;;
            esac
        done
        echo "$(cat "$TMP/u") $(cat "$TMP/t") $(cat "$TMP/f") $("$B/bench/hotpath" --floor $FLOOR_CALLS)" \
            >>"$TMP/pairs"
    done
}

# The columns of $TMP/pairs: 1-2 untraced wall, cpu; 3-8 traced wall, cpu, writer, events,
# dropped, bytes; 9-10 floor variant wall, cpu; 11 F in ns.
col() { awk "{ print $1 }" "$TMP/pairs" | spread; }

tracer_instructions() { # tracer_instructions FILE: the instructions of a callgrind output file
    # that ran in the tracer's own code (the library and a generated shim), callees elsewhere not
    # included; 0 for the writer's thread. Not at__core_slow: valgrind registers no rseq area,
    # so each event calls it for the CPU number that natively is one inline load.
    awk '/^fn=writer_main$/ { exit_zero = 1 }
        /^ob=/ { ob = substr($0, 4) }
        /^fn=/ { fn = substr($0, 4) }
        /^calls=/ { callee = 1; next } # the next line: the inclusive cost of a call
        /^[0-9]/ { if (!callee && ob ~ /libactortrace|libshim/ && fn != "at__core_slow") n += $2
                   callee = 0 }
        END { print exit_zero ? 0 : n + 0 }' "$1"
}

cg_run() { # cg_run PRELOAD COMMAND...: "instructions events": the tracer's on the program's threads
    local preload=$1 f events
    shift
    rm -rf "$TMP/cg" "$TMP/cg.trace" && mkdir "$TMP/cg"
    ACTORTRACE_OUT="$TMP/cg.trace" LD_PRELOAD="$preload" valgrind --tool=callgrind \
        --separate-threads=yes --compress-strings=no --compress-pos=no \
        --callgrind-out-file="$TMP/cg/out" "$@" >/dev/null 2>&1 || return 1
    events=$("$B/tracedecode" -f stats --json "$TMP/cg.trace" 2>/dev/null | jq .events)
    for f in "$TMP"/cg/out-*; do tracer_instructions "$f"; done |
        awk -v e="${events:-0}" '{ n += $1 } END { print n, e }'
}

instructions_row() { # instructions_row LIB FLOOR_LIB SMALL BIG: the "instructions" line of a row
    # Each of SMALL and BIG is a command (a string), BIG the same program doing twice the work.
    # The figure is the difference between the two runs' instructions over the difference
    # between their events, which leaves out what start-up and exit cost.
    local lib=$1 floorlib=$2 small=$3 big=$4 out=$TMP/cg.counts preload cmd
    if ! command -v valgrind >/dev/null; then
        echo "    instructions: not counted (no valgrind, and this VM counts none for perf stat)"
        return
    fi
    rm -f "$out"
    for preload in "$lib" "$floorlib"; do
        for cmd in "$small" "$big"; do
            # shellcheck disable=SC2086
            cg_run "$preload" $cmd >>"$out" || echo "0 0" >>"$out"
        done
    done
    tr '\n' ' ' <"$out" | awk -v cmd="$big" '{
        # traced small, big; floor variant small, big: "instructions events" each
        e = $4 - $2
        if ($1 == 0 || $5 == 0 || e <= 0) {
            printf "    instructions: not counted (a callgrind run of %s failed or recorded nothing)\n", cmd
            exit
        }
        printf "    instructions per event in the tracer code, program threads: %.0f; floor variant %.0f (callgrind, %s minus its half)\n",
            ($3 - $1) / e, ($7 - $5) / e, cmd }' | sed "s|$B/||g"
}

phases_row() { # phases_row LIB F COMMAND...: the "phases" line of a row, F in ns
    local lib=$1 f=$2 i
    shift 2
    # the copy of LIB (or of its first library, with a shim after it) that times the phases
    lib=$(echo "$lib" | sed "s|^$B/libactortrace.so|$B/bench/phases/libactortrace.so|
        s|^$B/tests/libactortrace-refrt.so|$B/bench/phases/libactortrace-refrt.so|
        s|^$B/bench/libactortrace-bench.so|$B/bench/phases/libactortrace-bench.so|")
    if [ ! -e "${lib%%:*}" ] || [ "${lib#"$B/bench/phases/"}" = "$lib" ]; then
        echo "    writer by phase: not measured (no copy of the library times them; make bench builds them)"
        return
    fi
    rm -f "$TMP/phases"
    for i in $(seq "$PHASE_RUNS"); do
        rm -f "$TMP/ph.trace"
        ACTORTRACE_OUT="$TMP/ph.trace" PHASES_OUT="$TMP/phases" LD_PRELOAD="$(echo "$lib" | tr : ' ')" \
            "$@" >/dev/null 2>&1
    done
    # one line a run: encode E pack P grow G write W clear C writer T events N (ns)
    awk -v f="$f" -v runs="$PHASE_RUNS" '$14 > 0 {
            n++; for (k = 2; k <= 12; k += 2) v[k, n] = $k / $14 / f
            v[0, n] = ($12 - $2 - $4 - $6 - $8 - $10) / $14 / f }
        function median(k,   i, j, t, a) {
            for (i = 1; i <= n; i++) a[i] = v[k, i]
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END {
            if (n == 0) { printf "    writer by phase: not measured (no run of %d wrote the figures)\n", runs; exit }
            printf "    writer by phase in F (%d runs, medians): encode %.2f, pack (zstd) %.2f, grow the ring %.2f, write %.2f, clear %.2f, rest %.2f; all %.2f\n",
                n, median(2), median(4), median(6), median(8), median(10), median(0), median(12) }' "$TMP/phases"
}

row() { # row NAME LIB FLOOR_LIB SMALL BIG COMMAND...: one program's figures (instructions_row:
    # SMALL and BIG)
    local name=$1 lib=$2 floorlib=$3 small=$4 big=$5
    shift 5
    if [ ! -x "$1" ]; then
        echo "  $name: not measured: $1 is not built (make bench builds it)"
        return
    fi
    pairs "$lib" "$floorlib" "$@"
    cat "$TMP/pairs" >>"$TMP/all_pairs"
    if [ "$(col '$6' | cut -d ' ' -f 1)" = 0 ]; then
        echo "  $name: not measured: the traced run wrote no event (see $TMP/pairs)"
        return
    fi
    local f wall floorwall prog writer floorprog bytes events dropped
    f=$(col '$11' | cut -d ' ' -f 1)
    wall=$(col '$3 / $1') floorwall=$(col '$9 / $1')
    prog=$(col "(\$4 - \$5 - \$2) / \$6 / $f") writer=$(col "\$5 / \$6 / $f")
    floorprog=$(col "(\$10 - \$2) / \$6 / $f") bytes=$(col '$8 / $6')
    events=$(col '$6' | cut -d ' ' -f 1) dropped=$(col '$7' | cut -d ' ' -f 1)
    case "$f $wall $floorwall $prog $writer $floorprog $bytes" in
    *nan* | *inf* | *' '' '*)
        echo "  $name: not measured: a run printed no time (see $TMP/pairs)"
        return
        ;;
    esac
    echo "  $name ($*, $events events, $dropped dropped; F here $f ns)" | sed "s|$B/||g"
    echo "$wall|$floorwall|$prog|$writer|$floorprog|$bytes" | awk -F '|' '
        function m(s, x) { split(s, x, " "); return sprintf("%.2f [%.2f-%.2f]", x[1], x[2], x[3]) }
        { printf "    wall traced/untraced %s, floor variant %s\n", m($1), m($2)
          printf "    CPU added per event in F: program threads %s, writer %s; floor variant %s\n",
              m($3), m($4), m($5)
          split($6, b, " "); printf "    %.2f bytes/event\n", b[1] }'
    phases_row "$lib" "$f" "$@"
    instructions_row "$lib" "$floorlib" "$small" "$big"
}

echo "== real programs: traced / untraced, and the floor variant (the same shims, one rdtsc and a 16-byte"
echo "   store per event, no writer), $PAIRS interleaved pairs each, medians [middle half]; units of F"
FL="$B/bench/floor"
PRODUCT="$B/libactortrace.so"
rm -f "$TMP/all_pairs"
row "Aether stand-in fork/join, linked in (entry patching)" "$PRODUCT" "$FL/libactortrace.so" \
    "$B/static/aether/forkjoin 8 250" "$B/static/aether/forkjoin 8 500" "$B/static/aether/forkjoin" 8 5000
row "Aether stand-in fork/join, shared libaether.so" "$PRODUCT" "$FL/libactortrace.so" \
    "$B/tests/aether/forkjoin 8 250" "$B/tests/aether/forkjoin 8 500" "$B/tests/aether/forkjoin" 8 5000
row "CAF ping-pong" "$PRODUCT" "$FL/libactortrace.so" \
    "$B/bench/caf_pingpong 1000 200" "$B/bench/caf_pingpong 2000 200" "$B/bench/caf_pingpong" 50000 10000
row "CZMQ ping-pong over a zloop" "$PRODUCT" "$FL/libactortrace.so" \
    "$B/tests/czmq/pingpong zloop 1000" "$B/tests/czmq/pingpong zloop 2000" "$B/tests/czmq/pingpong" zloop 20000
row "CZMQ classes (zproxy, zmonitor)" "$PRODUCT" "$FL/libactortrace.so" \
    "$B/tests/czmq/classes 1000" "$B/tests/czmq/classes 2000" "$B/tests/czmq/classes" 20000
row "GLib (tests/targets/shimgen/glib.spec)" "$PRODUCT:$B/bench/glib/libshim-glib.so" \
    "$FL/libactortrace.so:$B/bench/glib/floor/libshim-glib.so" \
    "$B/shimgen-test/glib_demo 20000 20" "$B/shimgen-test/glib_demo 40000 20" "$B/shimgen-test/glib_demo" 400000 200
row "refrt pingpong" "$B/tests/libactortrace-refrt.so" "$FL/libactortrace-refrt.so" \
    "$B/examples/pingpong 10000" "$B/examples/pingpong 20000" "$B/examples/pingpong" 300000
row "nop_send loop" "$B/bench/libactortrace-bench.so" "$FL/libactortrace-bench.so" \
    "$B/bench/hotpath 100000" "$B/bench/hotpath 200000" "$B/bench/hotpath" 5000000
awk '{ print $11 }' "$TMP/all_pairs" | spread | awk '{
    printf "  F over the section: %.1f ns [%.1f-%.1f] (hotpath --floor, one measurement a pair)\n", $1, $2, $3 }'
