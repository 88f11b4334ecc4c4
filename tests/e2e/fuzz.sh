#!/bin/sh
# tracedecode under libFuzzer (tests/fuzz/fuzz_decode.c), from seeds that are real traces of the
# reference runtime's examples: whole, stored raw, cut and damaged; then the predicted encoding's
# decoder alone (tests/fuzz/fuzz_predict.c). The seeds must decode as
# such with tracedecode, every input in tests/fuzz/regressions/ must replay cleanly, and the
# fuzzer must run FUZZ_SECONDS (25; `make fuzz` gives 600) without a crash, a hang (10 s on an
# input), a leak, an allocation above 64 MiB or 640 MiB of memory in all. FUZZ_CORPUS keeps
# the inputs it finds for the next run; the input of a failure goes to build/fuzz/artifacts/.
. "$(dirname "$0")/../lib.sh"

FUZZER="$B/fuzz/fuzz_decode"
seconds=${FUZZ_SECONDS:-25}
corpus=${FUZZ_CORPUS:-$TMP/corpus}
seeds="$TMP/seeds"
artifacts="$B/fuzz/artifacts"
mkdir -p "$corpus" "$seeds" "$artifacts"

# ---- Seeds: small traces (4 KiB blocks, so several frames per thread; ring's frames hold
# several blocks each) ----

seed() { # seed NAME ARGS...: a trace of the example NAME (up to a '-'), and the same stored raw
    local name="$1"
    shift
    ACTORTRACE_BLOCK_KB=4 traced "$seeds/$name" "$B/examples/${name%%-*}" "$@" >/dev/null 2>&1
    "$DECODE" -o "$TMP/$name.jsonl" "$seeds/$name" 2>/dev/null
    local status=$? events
    events=$(summary "$TMP/$name.jsonl" events)
    check "seed $name: decodes cleanly ($events events)" [ $status -eq 0 -a "$events" -gt 0 ]
    limit "$B/fuzz/rawtrace" "$seeds/$name" "$seeds/$name-raw"
    "$DECODE" -o "$TMP/$name-raw.jsonl" "$seeds/$name-raw" 2>/dev/null
    check "seed $name-raw: decodes to the same events, stored raw" \
        cmp -s "$TMP/$name.jsonl" "$TMP/$name-raw.jsonl"
}
seed pingpong 40
seed ring 4 100
# the columns without a clock step, and with a step and a lattice that most timestamps are off
# (the test copy's ACTORTRACE_TEST_TSC_LATTICE), whatever this machine's clock moves in
ACTORTRACE_TEST_TSC_LATTICE=1 seed pingpong-nostep 40
ACTORTRACE_TEST_TSC_LATTICE=7 seed ring-step7 4 100
ACTORTRACE_TEST_TSC_LATTICE=11:0,5 seed ring-lattice11 4 100
# in the predicted encoding (ACTORTRACE_ENCODING=predicted), each frame's blocks decoded by
# at_events_unpredict
ACTORTRACE_ENCODING=predicted seed pingpong-predicted 40
ACTORTRACE_ENCODING=predicted seed ring-predicted 4 100
# with call stacks on every send and spawn: STACK and MODULE records for the fuzzer to mutate
export ACTORTRACE_STACKS=send,spawn
seed fanout 2 50
unset ACTORTRACE_STACKS

size=$(stat -c %s "$seeds/ring")
head -c $((size * 2 / 3)) "$seeds/ring" >"$seeds/cut"
"$DECODE" -o "$TMP/cut.jsonl" "$seeds/cut" 2>/dev/null
status=$?
check "seed cut: decodes as truncated" \
    [ $status -eq 1 -a "$(summary "$TMP/cut.jsonl" truncated)" = true ]

cp "$seeds/fanout" "$seeds/damaged"
printf '\377' | dd of="$seeds/damaged" bs=1 seek=$(($(stat -c %s "$seeds/fanout") / 2)) \
    conv=notrunc 2>/dev/null
"$DECODE" -o "$TMP/damaged.jsonl" "$seeds/damaged" 2>/dev/null
status=$?
check "seed damaged: decodes with a damaged frame" \
    [ $status -eq 1 -a "$(summary "$TMP/damaged.jsonl" damaged_frames)" -ge 1 ]

# Small traces that claim much memory (tests/fuzz/bombtrace.c): frames of 2 M events, frames of
# the most events a frame may hold, all overlapping, and META frames of 16 MiB of records.
limit "$B/fuzz/bombtrace" "$seeds/bomb-big" 20 2097152
limit "$B/fuzz/bombtrace" "$seeds/bomb-many" 200 8192
limit "$B/fuzz/bombtrace" "$seeds/bomb-meta" 15 3355443 meta
check "bomb seeds written" [ -s "$seeds/bomb-big" -a -s "$seeds/bomb-many" -a -s "$seeds/bomb-meta" ]

# ---- Inputs that once crashed or hung: tests/fuzz/regressions/, named after what they hold ----

# What counts as a hang (seconds per input) and as an oversized allocation (MiB). The decoder
# holds at most 1 MiB of decoded events plus 32 bytes per byte of input (32 KiB at most here;
# outside the fuzzing build, 128 MiB plus 256), 4 MiB of metadata plus 16 bytes per byte, and
# its largest single allocation is a 16 MiB payload buffer, grown by doubling: a trace that
# makes it pass these has found a hole in its limits. The quarantine of freed memory is kept
# small, so that RSS is the decoder's.
limits="-timeout=10 -rss_limit_mb=640 -malloc_limit_mb=64"
export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16"
regressions=$(ls "$TOP"/tests/fuzz/regressions/* | wc -l)
# shellcheck disable=SC2086
"$FUZZER" $limits "$TOP"/tests/fuzz/regressions/* >"$TMP/regressions.log" 2>&1
if [ $? -eq 0 ] && [ "$regressions" -gt 0 ]; then
    echo "ok - $regressions regression inputs replay cleanly"
else
    cp "$TMP/regressions.log" "$artifacts/regressions-$$.log"
    echo "not ok - regression inputs replay: log: $artifacts/regressions-$$.log"
fi

# ---- The fuzzer ----

# shellcheck disable=SC2086
"$FUZZER" -max_total_time="$seconds" $limits -max_len=32768 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$TMP/fuzz.log" 2>&1
status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/fuzz.log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$TMP/fuzz.log")
echo "# $runs executions in $seconds s ($rate/s); corpus: $(ls "$corpus" | wc -l) inputs"
if [ $status -eq 0 ] && [ -n "$runs" ]; then
    echo "ok - fuzzer ran $runs executions without a crash, hang, leak or oversized allocation"
else
    cp "$TMP/fuzz.log" "$artifacts/fuzz-$$.log"
    input=$(sed -n 's/.*Test unit written to //p' "$TMP/fuzz.log" | tail -n 1)
    echo "not ok - fuzzer failed (status $status) on ${input:-no saved input};" \
        "log: $artifacts/fuzz-$$.log"
fi

# ---- The predicted encoding's decoder alone (tests/fuzz/fuzz_predict.c): a fifth of the time,
# from a one-event block (FORMAT.md 4.2: the kind follows, kind 3, tsc residual 5) ----

predict_corpus=${FUZZ_CORPUS:+$FUZZ_CORPUS-predict}
predict_corpus=${predict_corpus:-$TMP/predict}
mkdir -p "$predict_corpus"
printf '\001\000\020\003\012' >"$predict_corpus/one-event"
# shellcheck disable=SC2086
"$B/fuzz/fuzz_predict" -max_total_time=$((seconds / 5 + 5)) $limits -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$predict_corpus" >"$TMP/predict.log" 2>&1
status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TMP/predict.log")
if [ $status -eq 0 ] && [ -n "$runs" ]; then
    echo "ok - predicted-encoding fuzzer ran $runs executions: decodes safely, re-encodes the same"
else
    cp "$TMP/predict.log" "$artifacts/predict-$$.log"
    echo "not ok - predicted-encoding fuzzer failed (status $status); log: $artifacts/predict-$$.log"
fi
