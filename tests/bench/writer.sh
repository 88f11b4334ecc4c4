#!/bin/sh
# The tracer's CPU per event and bytes per event on four programs: the nop_send loop, refrt's
# pingpong 1000000, and the CZMQ programs of tests/targets/czmq (pingpong over a zloop, CZMQ's own
# zproxy and zmonitor actors). Each run is one untraced and one traced run back to back (block
# mode, so that every event is written and none is dropped), RUNS times; the figures are
# medians:
#   process   the traced process's CPU time (all threads, user + system) per event
#   added     traced minus untraced CPU time, per event: what tracing costs in all
#   writer    the writer thread's own CPU time per event (libthreadcpu.so measures it)
#   bytes     trace file bytes per event
#   F         the floor (hotpath --floor: one rdtsc and a 16-byte store), measured beside each
#             traced run, and the writer in units of it
# and, under each, the writer thread's instructions per event in a smaller run of the program
# (callgrind, block mode; start-up and exit included, as a short program pays them), a figure
# the machine's load does not move, also for the compared build; and the writer's encoding and
# zstd of the last traced run's events measured apart
# from the program (tests/bench/codec.c): the least the writer can cost with this format; and
# the same for the predicted encoding.
# With COMPARE_LIB, COMPARE_LIB_NOP and COMPARE_LIB_REFRT (another build of libactortrace.so,
# of the benchmark's copy of it and of the test copy with refrt's shim), each run also traces
# with those, interleaved, and both are printed.
# Run by tests/bench/run.sh; runs alone too: sh tests/bench/writer.sh
. "$(dirname "$0")/lib.sh"

cpu_ns() { # cpu_ns COMMAND...: the command's CPU time (user + system, all threads) in ns
    bash -c 'TIMEFORMAT="%3U %3S"; { time "$@" >/dev/null 2>&1; } 2>&1' cpu_ns "$@" |
        awk '{ printf "%d\n", ($1 + $2) * 1e9 }'
}

traced_run() { # traced_run LIB LABEL COMMAND...: appends "cpu writer events bytes" to $TMP/LABEL
    local lib=$1 label=$2
    shift 2
    rm -f "$TMP/t.trace" "$TMP/w"
    local cpu events
    cpu=$(cpu_ns env ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/t.trace" THREADCPU_OUT="$TMP/w" \
        LD_PRELOAD="$B/bench/libthreadcpu.so $lib" "$@")
    events=$("$B/tracedecode" -f stats --json "$TMP/t.trace" 2>/dev/null | jq .events)
    echo "$cpu $(cat "$TMP/w" 2>/dev/null || echo 0) ${events:-0} $(stat -c %s "$TMP/t.trace" 2>/dev/null || echo 0)" \
        >>"$TMP/$label"
    [ "$label" != this ] || [ ! -e "$TMP/t.trace" ] || mv "$TMP/t.trace" "$TMP/this.trace"
}

floor() { # floor: the writer's encoding and zstd on the last traced run's events, apart
    # from the program and warm in the cache (tests/bench/codec.c): the least the writer can
    # cost per event with this format, beside what it cost in the program
    printf "    apart from the program: %s\n" "$("$B/bench/codec" "$TMP/this.trace" | cut -d ';' -f 1)"
    # each frame on its first pass, as the writer meets it (zstd's workspace not in the cache)
    printf "    the same, first passes: %s\n" \
        "$("$B/bench/codec" "$TMP/this.trace" first | cut -d ';' -f 1)"
    # the same events in the predicted encoding (ACTORTRACE_ENCODING=predicted) and its bytes
    printf "    predicted encoding:     %s\n" "$("$B/bench/codec" "$TMP/this.trace" predicted |
        sed 's/ huffman-coded, / (/; s/ stored as encoded.*/ stored as encoded)/')"
    rm -f "$TMP/this.trace"
}

report() { # report LABEL NAME: the medians of $TMP/LABEL against $TMP/plain
    paste -d ' ' "$TMP/plain" "$TMP/$1" | awk '{ print $2 / $4, ($2 - $1) / $4, $3 / $4, $5 / $4 }' >"$TMP/$1.per"
    col() { cut -d ' ' -f "$1" "$TMP/$2.per" | median; }
    local f
    f=$(median <"$TMP/F")
    printf "  %-28s process %5.1f ns/event, added %5.1f, writer %5.1f (%.2f F); %5.2f bytes/event; F %.1f ns\n" \
        "$2" "$(col 1 "$1")" "$(col 2 "$1")" "$(col 3 "$1")" "$(col 3 "$1" | awk -v f="$f" '{ print $1 / f }')" \
        "$(col 4 "$1")" "$f"
}

writer_instructions() { # writer_instructions LABEL LIB COMMAND...: the writer thread's
    # instructions per event, callgrind counting each thread apart
    local label=$1 lib=$2 f n events
    shift 2
    rm -rf "$TMP/cg" "$TMP/cg.trace" && mkdir "$TMP/cg"
    ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/cg.trace" LD_PRELOAD="$lib" valgrind \
        --tool=callgrind --separate-threads=yes --compress-strings=no \
        --callgrind-out-file="$TMP/cg/out" "$@" >/dev/null 2>&1
    events=$("$B/tracedecode" -f stats --json "$TMP/cg.trace" 2>/dev/null | jq .events)
    f=$(grep -l 'fn=.*writer_main' "$TMP"/cg/out-* 2>/dev/null | head -n 1)
    n=$([ -n "$f" ] && sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$f" | head -n 1)
    if [ -z "$n" ] || [ "${events:-0}" -le 0 ] 2>/dev/null || [ "$events" = null ]; then
        printf "    writer instructions%s: not counted (the callgrind run of %s failed)\n" "$label" "$*"
        return
    fi
    printf "    writer instructions%s: %.0f per event (callgrind, %s: %d events)\n" "$label" \
        "$(echo "$n $events" | awk '{ print $1 / $2 }')" "$(echo "$*" | sed "s|$B/||g")" "$events"
}

instructions() { # instructions LIB OTHER_LIB COMMAND...: writer_instructions for both builds
    local lib=$1 other=$2
    shift 2
    if ! command -v valgrind >/dev/null; then
        echo "    writer instructions: not counted (no valgrind)"
        return
    fi
    writer_instructions "" "$lib" "$@"
    [ -z "$other" ] || writer_instructions " (compared)" "$other" "$@"
}

measure() { # measure NAME LIB OTHER_LIB COMMAND...: OTHER_LIB "" compares with nothing
    local name=$1 lib=$2 other=$3
    shift 3
    if [ ! -x "$1" ]; then # a row of figures, never inf or nan: it says why it has none
        printf "  %-28s not measured: %s is not built (make bench builds it)\n" "$name" "$1"
        return
    fi
    rm -f "$TMP/plain" "$TMP/this" "$TMP/other" "$TMP/F"
    for i in $(seq "$RUNS"); do
        cpu_ns "$@" >>"$TMP/plain"
        "$B/bench/hotpath" --floor >>"$TMP/F"
        if [ -n "$other" ] && [ $((i % 2)) = 0 ]; then traced_run "$other" other "$@"; fi
        traced_run "$lib" this "$@"
        if [ -n "$other" ] && [ $((i % 2)) = 1 ]; then traced_run "$other" other "$@"; fi
    done
    if awk '$4 <= 0 { bad = 1 } END { exit !bad }' "$TMP/this"; then
        printf "  %-28s not measured: a traced run wrote no event (%s)\n" "$name" "$lib"
        return
    fi
    report this "$name"
    floor
    [ -z "$other" ] || report other "$name (compared)"
}

echo "== the tracer's CPU and bytes per event (block mode, medians of $RUNS runs; targets for the"
echo "   nop_send loop and pingpong: the whole process <= 20 ns/event, the writer <= 8, bytes <= 2)"
# refrt's shim is only in the test copy of the library, never in the product
measure "nop_send loop, 5 M calls" "$B/bench/libactortrace-bench.so" "${COMPARE_LIB_NOP:-}" \
    "$B/bench/hotpath" 5000000
[ ! -x "$B/bench/hotpath" ] || instructions "$B/bench/libactortrace-bench.so" \
    "${COMPARE_LIB_NOP:-}" "$B/bench/hotpath" 1000000
measure "refrt pingpong 1000000" "$B/tests/libactortrace-refrt.so" "${COMPARE_LIB_REFRT:-}" \
    "$B/examples/pingpong" 1000000
[ ! -x "$B/examples/pingpong" ] || instructions "$B/tests/libactortrace-refrt.so" \
    "${COMPARE_LIB_REFRT:-}" "$B/examples/pingpong" 100000
measure "CZMQ pingpong zloop 20000" "$B/libactortrace.so" "${COMPARE_LIB:-}" \
    "$B/tests/czmq/pingpong" zloop 20000
[ ! -x "$B/tests/czmq/pingpong" ] || instructions "$B/libactortrace.so" "${COMPARE_LIB:-}" \
    "$B/tests/czmq/pingpong" zloop 2000
measure "CZMQ classes 20000" "$B/libactortrace.so" "${COMPARE_LIB:-}" "$B/tests/czmq/classes" 20000
[ ! -x "$B/tests/czmq/classes" ] || instructions "$B/libactortrace.so" "${COMPARE_LIB:-}" \
    "$B/tests/czmq/classes" 2000
