#!/bin/sh
# The Aether ABI stand-in's ping-pong and fork/join (tests/targets/aether), untraced vs traced,
# placed freely (issue 14's target: traced at least 95% of untraced). Each figure is throughput
# traced / untraced: the runtime's own time from scheduler_start to the end of scheduler_wait, so
# the tracer's start-up is outside it. Each pair is one untraced and one traced run back to back
# (which goes first alternates), so both see the same background load; the figure is the median
# of the pairs' ratios, with the middle half of them as its spread. Then the CPU time of all the
# process's threads over the same span (the writer's included), which waits do not inflate, and
# the writer thread's own CPU time (its whole life, measured by libthreadcpu.so) as a share of
# the untraced run's CPU time.
# Each pair also runs traced with the writer at nice AETHER_NICE (19 unless set; through
# ACTORTRACE_WRITER_NICE), which then works when the program leaves a core idle.
# AETHER_PAIRS sets the number of pairs (default 5 x RUNS: the fork/join's runs spread widely).
# With COMPARE_LIB (another build of libactortrace.so), each pair also runs traced with it,
# interleaved, and its figures follow.
. "$(dirname "$0")/lib.sh"

PAIRS=${AETHER_PAIRS:-$((5 * RUNS))}
NICE=${AETHER_NICE:-19}
# the library at the default settings, then with ACTORTRACE_WRITER_NICE=$NICE, then COMPARE_LIB
LIBS="$B/libactortrace.so nice:$B/libactortrace.so ${COMPARE_LIB:-}"

aether_times() { grep '^{"ground_truth"' | jq -r '"\(.ground_truth.elapsed_ns) \(.ground_truth.cpu_ns)"'; }

aether_traced() { # aether_traced LIB OUT PROGRAM ARGS...: "wall cpu writer_cpu" into OUT
    lib=$1 out=$2 nice=0 # LIB nice:PATH: PATH with the writer at nice $NICE
    shift 2
    case $lib in nice:*) nice=$NICE lib=${lib#nice:} ;; esac
    rm -f "$TMP/ae.writer"
    ACTORTRACE_WRITER_NICE=$nice ACTORTRACE_OUT="$TMP/ae.trace" THREADCPU_OUT="$TMP/ae.writer" \
        LD_PRELOAD="$B/bench/libthreadcpu.so $lib" "$@" | aether_times >"$out"
    echo " $(cat "$TMP/ae.writer" 2>/dev/null || echo 0)" >>"$out"
    rm -f "$TMP/ae.trace"
}

aether_report() { # aether_report FILE LABEL COLUMN: the figures of the traced runs in COLUMN
    file=$1 label=$2 c=$3
    awk -v c="$c" '{ print $1 / $c }' "$file" | sort -n | awk -v label="$label" '
        { r[NR] = $1 }
        END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
              printf "  %s: traced = %.1f%% of untraced (median of %d pairs, middle half %.1f-%.1f%%; target >= 95%%)\n",
                  label, 100 * m, NR, 100 * r[int(NR / 4) + 1], 100 * r[NR - int(NR / 4)] }'
    awk -v p="$(cut -d ' ' -f 1 "$file" | median)" -v t="$(cut -d ' ' -f "$c" "$file" | median)" \
        -v cpu="$(awk -v c="$c" '{ print $(c + 1) / $2 }' "$file" | median)" \
        -v w="$(awk -v c="$c" '{ print $(c + 2) / $2 }' "$file" | median)" 'BEGIN {
        printf "    untraced %.1f ms, traced %.1f ms (medians); CPU time, all threads: %+.1f%%; the writer thread, its whole life: %.1f%% of the untraced CPU time (medians of the pairs)\n",
            p / 1e6, t / 1e6, 100 * (cpu - 1), 100 * w }'
}

aether_pairs() { # aether_pairs NAME LABEL PROGRAM ARGS...: a line a pair in $TMP/NAME, "wall cpu"
    name=$1 label=$2 # untraced, then "wall cpu writer" traced with each library
    shift 2
    rm -f "$TMP/$name"
    for i in $(seq "$PAIRS"); do
        [ $((i % 2)) = 0 ] || "$@" | aether_times >"$TMP/ae.plain" # untraced first in odd pairs
        n=0
        for lib in $LIBS; do
            n=$((n + 1))
            aether_traced "$lib" "$TMP/ae.traced.$n" "$@"
        done
        [ $((i % 2)) = 1 ] || "$@" | aether_times >"$TMP/ae.plain"
        echo $(cat "$TMP/ae.plain" "$TMP"/ae.traced.*) >>"$TMP/$name"
    done
    aether_report "$TMP/$name" "$label" 3
    aether_report "$TMP/$name" "$label, the writer at nice $NICE (ACTORTRACE_WRITER_NICE=$NICE)" 6
    [ -z "${COMPARE_LIB:-}" ] || aether_report "$TMP/$name" "$label, with $COMPARE_LIB" 9
}

echo "== Aether ABI stand-in (tests/targets/aether): ping-pong and fork/join, untraced vs traced"
aether_pairs ae_pingpong "ping-pong 10000 round trips" "$B/tests/aether/pingpong" 10000
aether_pairs ae_forkjoin "fork/join 8 workers x 5000 rounds" "$B/tests/aether/forkjoin" 8 5000
