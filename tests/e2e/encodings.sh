#!/bin/sh
# The predicted event encoding (ACTORTRACE_ENCODING=predicted, FORMAT.md section 4.2) on real
# programs: every frame is written in it, each event kind's count equals the runtime's own, every
# message sent is received with the same id, and timestamps never go back. When blocks pile up
# (a writer made late on a buffer far too small) frames are stored without the entropy stage and
# nothing is lost; columns keep zstd then. Overwrite mode keeps and counts as it does in columns.
# The columns with a clock step or lattice (sections 4.3 and 4.4), forced by the test copy's
# ACTORTRACE_TEST_TSC_LATTICE: none (encodings 0 and 1), a step of 7 or a lattice of period 11
# with residues 0 and 5, which leave most timestamps off them, so that after a frame with one
# (encodings 4 and 5, 6 and 7, nearly every event in the list of those off it) the writer leaves
# it out of the next 64; checked the same.
. "$(dirname "$0")/../lib.sh"
P="$B/examples/pingpong"
SMALL="ACTORTRACE_BUFFER_MB=1 ACTORTRACE_BLOCK_KB=16"

# every event refrt counted: one send, recv, schedule, park, unpark, spawn, exit each, two per step
all_events() {
    tail -n 1 "$1" | jq '.ground_truth
        | .spawn + .send + .recv + 2 * .step + .schedule + .park + .unpark + .exit'
}

quiet_jq() { jq "$@" >/dev/null; } # its status only

encodings() { # encodings TRACE: "columns zstd predicted huffman", EVENTS frames of each encoding
    # (columns with or without a clock step or lattice)
    stepped_encodings "$1" | awk '{ print $1 + $5 + $7, $2 + $6 + $8, $3, $4 }'
}

stepped_encodings() { # stepped_encodings TRACE: the eight counts, the last four with a step
    # (two) or a lattice (two)
    "$B/bench/codec" "$1" encodings | sed 's/[^0-9 ]//g; s/  */ /g; s/^ //'
}

exact() { # exact NAME PROGRAM ARGS...: traced in the predicted encoding, checked against the truth
    name=$1
    shift
    ACTORTRACE_ENCODING=predicted traced "$TMP/$name.trace" "$@" >"$TMP/$name.out" \
        2>"$TMP/$name.err"
    check "$name: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/$name.err" ]
    set -- $(encodings "$TMP/$name.trace")
    check "$name: every frame predicted ($3 stored, $4 Huffman-coded)" \
        [ "$1$2" = 00 -a $(($3 + $4)) -gt 0 ]
    against_truth "$name"
}

against_truth() { # against_truth NAME: $TMP/NAME.trace decoded, checked against NAME.out's truth
    name=$1
    j="$TMP/$name.jsonl"
    "$DECODE" -o "$j" "$TMP/$name.trace"
    check "$name: decodes cleanly" [ $? -eq 0 ]
    out="$TMP/$name.out"
    for kind in spawn send recv schedule park unpark exit; do
        equal "$name: $kind events = ground truth" "$(kind_count "$j" "$kind")" \
            "$(truth "$out" "$kind")"
    done
    equal "$name: step_begin events = ground truth steps" "$(kind_count "$j" step_begin)" \
        "$(truth "$out" step)"
    check "$name: each message id sent is received, once" quiet_jq -n -e '
        [inputs | select(.event == "send" or .event == "recv") | [.event, .msg]]
        | (map(select(.[0] == "send") | .[1]) | sort) as $s
        | (map(select(.[0] == "recv") | .[1]) | sort) as $r
        | $s == $r and ($s | unique | length) == ($s | length)' "$j"
    check "$name: ts_ns never decreases" quiet_jq -n -e \
        'reduce (inputs | select(.ts_ns) | .ts_ns) as $t ({ok: true, last: 0};
            {ok: (.ok and $t >= .last), last: $t}) | .ok' "$j"
}
exact pingpong "$P" 20000
exact ring "$B/examples/ring" 8 2000
exact fanout "$B/examples/fanout" 4 3000

# columns with the clock's step or lattice forced: none, a step of 7, a lattice of period 11
# with residues 0 and 5
for clock in 1 7 11:0,5; do
    name="clock$(echo $clock | tr ':,' '__')"
    ACTORTRACE_TEST_TSC_LATTICE=$clock traced "$TMP/$name.trace" "$P" 20000 >"$TMP/$name.out" \
        2>"$TMP/$name.err"
    check "$name: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/$name.err" ]
    set -- $(stepped_encodings "$TMP/$name.trace")
    case $clock in
    1)
        check "clock 1: every frame in columns without a step or lattice ($1 stored, $2 zstd)" \
            [ "$3$4$5$6$7$8" = 000000 -a $(($1 + $2)) -gt 0 ]
        ;;
    7) # most deltas off a step of 7: one frame in 65 tries it
        check "step 7: frames with it ($5 stored, $6 zstd), then without ($1 stored, $2 zstd)" \
            [ "$3$4$7$8" = 0000 -a $(($5 + $6)) -gt 0 -a $(($1 + $2)) -gt $((($5 + $6) * 16)) ]
        ;;
    *) # most timestamps off the lattice: the same
        check "lattice 11 {0, 5}: frames with it ($7 stored, $8 zstd), then without ($1 + $2)" \
            [ "$3$4$5$6" = 0000 -a $(($7 + $8)) -gt 0 -a $(($1 + $2)) -gt $((($7 + $8) * 16)) ]
        ;;
    esac
    against_truth "$name"
done

# the writer sleeps 20 ms before each pass (the test copy's hook), so the 1 MiB pool is full
# and the threads wait (block mode): predicted frames are stored as encoded, columns compressed
for enc in predicted columns; do
    env $SMALL ACTORTRACE_ENCODING=$enc ACTORTRACE_MODE=block ACTORTRACE_TEST_WRITER_DELAY_MS=20 \
        ACTORTRACE_OUT="$TMP/late-$enc.trace" LD_PRELOAD="$LIB" "$P" 300000 >"$TMP/late-$enc.out"
    "$DECODE" -o "$TMP/late-$enc.jsonl" "$TMP/late-$enc.trace"
    check "writer late, $enc: decodes cleanly" [ $? -eq 0 ]
    equal "writer late, $enc: every event kept" "$(summary "$TMP/late-$enc.jsonl" events)" \
        "$(all_events "$TMP/late-$enc.out")"
    set -- $(encodings "$TMP/late-$enc.trace")
    # (a frame is also stored as it is when packing does not make it smaller, as the last
    # small frames of a run may be)
    if [ $enc = predicted ]; then
        check "writer late, predicted: most frames stored without Huffman ($3 of $(($3 + $4)))" \
            [ "$1$2" = 00 -a "$3" -gt $(($4 * 2)) ]
    else
        check "writer late, columns: frames compressed all the same ($2 of $(($1 + $2)))" \
            [ "$3$4" = 00 -a "$1" -lt $(($2 / 10)) ]
    fi
done

# zstd's contexts have their memory set aside at the start, for the largest frame at the level,
# and never allocate: at every level frames are compressed, and Huffman-coded in the predicted
# encoding, all but the last small ones (a pool of 32 MiB never fills with 200,000 events)
for level in 1 3 19 predicted; do
    enc=columns
    [ $level != predicted ] || enc=predicted level=1
    t="$TMP/level-$enc-$level.trace"
    env ACTORTRACE_ENCODING=$enc ACTORTRACE_ZSTD_LEVEL=$level ACTORTRACE_MODE=block \
        ACTORTRACE_OUT="$t" LD_PRELOAD="$LIB" "$P" 20000 >/dev/null
    set -- $(encodings "$t")
    [ $enc = columns ] || set -- "$3" "$4" "$1" "$2"
    check "$enc, zstd level $level: frames packed ($2 of $(($1 + $2)))" \
        [ "$3$4" = 00 -a "$2" -gt 0 -a "$1" -le $(($2 / 10)) ]
done

# overwrite mode: kept + replaced = every event, as in columns (modes.sh)
env $SMALL ACTORTRACE_ENCODING=predicted ACTORTRACE_MODE=overwrite \
    ACTORTRACE_OUT="$TMP/overwrite.trace" LD_PRELOAD="$LIB" "$P" 300000 >"$TMP/overwrite.out"
"$DECODE" -o "$TMP/overwrite.jsonl" "$TMP/overwrite.trace"
check "overwrite, predicted: decodes cleanly" [ $? -eq 0 ]
kept=$(summary "$TMP/overwrite.jsonl" events)
lost=$(summary "$TMP/overwrite.jsonl" dropped)
check "overwrite, predicted: older events were replaced ($lost)" [ "$lost" -gt 0 ]
equal "overwrite, predicted: kept + replaced = every event the program made" $((kept + lost)) \
    "$(all_events "$TMP/overwrite.out")"
