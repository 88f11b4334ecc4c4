#!/bin/sh
# A real trace, cut at many offsets and with bytes flipped inside frames, decoded by the
# ASan/UBSan build of tracedecode: it never crashes, reports the damage (exit status 1), keeps
# every intact frame, and a longer prefix never yields fewer events than a shorter one.
. "$(dirname "$0")/../lib.sh"

sane() { # sane STATUS STDERR: exit 0 or 1, no sanitizer report
    [ "$1" -le 1 ] && ! grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$2"
}

damage() { # damage ENCODING: the checks on a trace written in ACTORTRACE_ENCODING=ENCODING
    enc=$1
    # 4 KiB blocks (100 events): the writer puts up to 8 of a thread in one frame, and a damaged
    # frame costs all of them
    ACTORTRACE_ENCODING=$enc ACTORTRACE_BLOCK_KB=4 traced "$TMP/t.trace" "$B/examples/ring" 8 300 \
        >/dev/null 2>&1
    full=$("$DECODE" "$TMP/t.trace" | tail -n 1 | jq .events)
    size=$(stat -c %s "$TMP/t.trace")
    check "$enc: reference trace has events" [ "$full" -gt 1000 ]
    "$B/bench/codec" "$TMP/t.trace" encodings >"$TMP/encodings"
    if [ "$enc" = predicted ]; then
        check "$enc: every frame predicted" \
            grep -q "frames: 0 columns, 0 columns+zstd, .*, 0 columns with a clock step, 0 the .*, 0 columns with a clock lattice, 0 the" \
            "$TMP/encodings"
    else # with a clock step, a lattice or neither, by this machine's clock
        check "$enc: every frame in columns" \
            grep -q " 0 predicted, 0 predicted+huffman," "$TMP/encodings"
    fi
    cuts "$enc"
    flip "$enc"
    rm -f "$TMP/t.trace"
}

cuts() { # cuts ENCODING: $TMP/t.trace cut at 150 offsets
    crashes=0 regress=0 unreported=0 last=0
    step=$((size / 150 + 1))
    offset=0
    while [ "$offset" -lt "$size" ]; do
        head -c "$offset" "$TMP/t.trace" >"$TMP/cut"
        "$ASAN_DECODE" -o "$TMP/cut.jsonl" "$TMP/cut" 2>"$TMP/cut.err"
        status=$?
        sane "$status" "$TMP/cut.err" || crashes=$((crashes + 1))
        if [ "$offset" -ge 16 ]; then
            [ "$status" -eq 1 ] && [ "$(summary "$TMP/cut.jsonl" truncated)" = true ] ||
                unreported=$((unreported + 1))
            n=$(summary "$TMP/cut.jsonl" events)
            [ "$n" -ge "$last" ] || regress=$((regress + 1))
            last=$n
        fi
        offset=$((offset + step))
    done
    equal "$1: cut traces: no crash or sanitizer report" "$crashes" 0
    equal "$1: cut traces: every cut reported as truncated, exit 1" "$unreported" 0
    equal "$1: cut traces: a longer prefix never decodes fewer events" "$regress" 0
}

flip() { # flip ENCODING: one byte flipped in the middle of $TMP/t.trace: one frame is
    # damaged, the others decode
    cp "$TMP/t.trace" "$TMP/flip"
    printf '\377' | dd of="$TMP/flip" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
    "$ASAN_DECODE" -o "$TMP/flip.jsonl" "$TMP/flip" 2>"$TMP/flip.err"
    status=$?
    check "$1: flipped byte: no crash" sane "$status" "$TMP/flip.err"
    equal "$1: flipped byte: exit status 1" "$status" 1
    check "$1: flipped byte: damage reported on stderr" grep -q "damaged" "$TMP/flip.err"
    equal "$1: flipped byte: one damaged frame in the summary" \
        "$(summary "$TMP/flip.jsonl" damaged_frames)" 1
    n=$(summary "$TMP/flip.jsonl" events)
    check "$1: flipped byte: at most one frame of events lost, 8 blocks ($n of $full kept)" \
        test "$n" -lt "$full" -a "$n" -ge $((full - 800))
}

damage columns
damage predicted
# the other checks on the columns' trace
ACTORTRACE_BLOCK_KB=4 traced "$TMP/t.trace" "$B/examples/ring" 8 300 >/dev/null 2>&1

# random bytes, and garbage after a valid header
head -c 100000 /dev/urandom >"$TMP/noise"
"$ASAN_DECODE" -o /dev/null "$TMP/noise" 2>"$TMP/noise.err"
status=$?
equal "not a trace: exit status 2" "$status" 2
check "not a trace: clear error" grep -q "not an actortrace" "$TMP/noise.err"
{ head -c 16 "$TMP/t.trace"; head -c 100000 /dev/urandom; } >"$TMP/junk"
"$ASAN_DECODE" -o /dev/null "$TMP/junk" 2>"$TMP/junk.err"
check "header then noise: no crash" sane $? "$TMP/junk.err"

# a trace of a later major format version: a clear refusal
cp "$TMP/t.trace" "$TMP/future"
printf '\003' | dd of="$TMP/future" bs=1 seek=8 conv=notrunc 2>/dev/null
"$ASAN_DECODE" -o /dev/null "$TMP/future" 2>"$TMP/future.err"
equal "newer format version: exit status 2" $? 2
check "newer format version: says so" grep -q "newer than this tracedecode" "$TMP/future.err"
