# Shared helpers for the end-to-end tests (sourced). Each check prints "ok - NAME" or
# "not ok - NAME"; tests/run.sh counts them.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B="$TOP/build"
# The product, and the test copy (the product plus the shim of the reference runtime, which
# the programs on refrt are traced with).
PRODUCT_LIB="$B/libactortrace.so"
LIB="$B/tests/libactortrace-refrt.so"
DECODE="$B/tracedecode"
ASAN_DECODE="$B/asan/tracedecode"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/actortrace-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Every run of a program in a test has a time limit: a program that hangs is killed and its
# check fails, instead of the test waiting for ever. RUN_LIMIT is in seconds.
RUN_LIMIT=${RUN_LIMIT:-120}
limit() { # limit PROGRAM ARGS...: runs PROGRAM, killed after RUN_LIMIT seconds
    timeout -s KILL "$RUN_LIMIT" "$@"
}

check() { # check NAME COMMAND...: ok when the command succeeds
    local check_name="$1"
    shift
    if "$@"; then echo "ok - $check_name"; else echo "not ok - $check_name"; fi
}

equal() { # equal NAME GOT WANT
    if [ "$2" = "$3" ]; then
        echo "ok - $1"
    else
        echo "not ok - $1: got '$2', want '$3'"
    fi
}

traced() { # traced TRACE PROGRAM ARGS...: runs PROGRAM with the tracer, output to TRACE
    local trace="$1"
    shift
    limit env ACTORTRACE_OUT="$trace" LD_PRELOAD="$LIB" "$@"
}

# kind_count JSONL KIND: number of events of that kind
kind_count() {
    grep -c "\"event\":\"$2\"" "$1" || true
}

# truth OUTPUT KEY: a ground-truth count from the {"ground_truth":{...}} line a test program
# prints
truth() {
    grep '^{"ground_truth"' "$1" | tail -n 1 | jq -r ".ground_truth.$2"
}

# run_both NAME PROGRAM ARGS...: runs PROGRAM untraced (output in $TMP/NAME.plain), then traced
# ($TMP/NAME.out, .err, .trace), and decodes to $TMP/NAME.jsonl; checks that both ran, that the
# tracer said nothing and changed no output, and that the trace is whole
run_both() {
    name=$1
    shift
    limit "$@" >"$TMP/$name.plain" 2>&1
    check "$name: runs untraced" [ $? -eq 0 ]
    traced "$TMP/$name.trace" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    check "$name: runs traced" [ $? -eq 0 ]
    check "$name: tracer printed nothing on stderr" [ ! -s "$TMP/$name.err" ]
    check "$name: output unchanged by tracing" cmp -s "$TMP/$name.plain" "$TMP/$name.out"
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
    check "$name: decodes cleanly" [ $? -eq 0 ]
    equal "$name: dropped" "$(summary "$TMP/$name.jsonl" dropped)" 0
    equal "$name: truncated" "$(summary "$TMP/$name.jsonl" truncated)" false
}

summary() { # summary JSONL FIELD
    tail -n 1 "$1" | jq -r ".$2"
}

# The benchmark's copy of the library: it also wraps nop_send, which the fault-test programs
# call to record events without a runtime of their own.
LIB_NOP="$B/bench/libactortrace-bench.so"
# The same with the test hooks: ACTORTRACE_TEST_WRITER_DELAY_MS=N (the writer sleeps N ms before
# each pass that writes events: drop mode drops for certain) and a pause at each take-back.
LIB_NOP_HOOKS="$B/tests/libactortrace-pause.so"

traced_nop() { # traced_nop TRACE PROGRAM ARGS...
    local trace="$1"
    shift
    limit env ACTORTRACE_OUT="$trace" LD_PRELOAD="$LIB_NOP" "$@"
}

# sends_of JSONL ACTOR: the number of send events to ACTOR
sends_of() {
    jq -c "select(.event == \"send\" and .actor == $2)" "$1" | wc -l
}

wait_for() { # wait_for COMMAND...: up to 20 s for the command to succeed
    for _ in $(seq 200); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

lacks() { # lacks FILE PATTERN: FILE does not hold PATTERN
    ! grep -q "$2" "$1"
}
