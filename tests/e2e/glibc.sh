#!/bin/sh
# The glibc parking shim (shim/glibc.c): off by default, so a program that parks through glibc
# leaves no trace of it; with ACTORTRACE_GLIBC=1 a condvar / semaphore / futex / C11 ping-pong
# leaves one park and one unpark per wait call it made and one wake per wake-up call, joined on
# the object's address; calls bound to the old GLIBC_2.2.5 condvar still reach glibc's own
# compatibility code.
. "$(dirname "$0")/../lib.sh"
PROG="$B/tests/progs/glibc_pingpong"
ROUNDS=2000

check "the condvar wrappers are pthread_cond_*@@GLIBC_2.3.2" [ "$(objdump -T "$LIB" |
    grep -cE 'GLIBC_2\.3\.2 +pthread_cond_(wait|timedwait|signal|broadcast)$')" -eq 4 ]

limit "$PROG" "$ROUNDS" >"$TMP/plain.out" 2>&1
check "runs untraced" [ $? -eq 0 ]

run_glibc() { # run_glibc NAME ENV-ARGS...: the program traced, with env's arguments
    name=$1
    shift
    traced "$TMP/$name.trace" env "$@" "$PROG" "$ROUNDS" >"$TMP/$name.out" 2>"$TMP/$name.err"
    check "$name: runs traced" [ $? -eq 0 ]
    check "$name: nothing on stderr" [ ! -s "$TMP/$name.err" ]
}

for setting in unset 0; do
    if [ "$setting" = unset ]; then
        run_glibc "ACTORTRACE_GLIBC unset" -u ACTORTRACE_GLIBC
    else
        run_glibc "ACTORTRACE_GLIBC=0" ACTORTRACE_GLIBC=0
    fi
    # the program calls no other wrapped function, so there is no event (and no trace file)
    events=0
    if [ -e "$TMP/$name.trace" ]; then
        events=$("$DECODE" "$TMP/$name.trace" | grep -c '"event"')
    fi
    equal "$name: no event recorded" "$events" 0
done

ACTORTRACE_GLIBC=yes traced "$TMP/bad.trace" "$PROG" 10 >/dev/null 2>"$TMP/bad.err"
check "ACTORTRACE_GLIBC=yes is reported and taken as 0" \
    grep -q 'ACTORTRACE_GLIBC=yes is not 0 or 1; using 0' "$TMP/bad.err"

run_glibc on ACTORTRACE_GLIBC=1
"$DECODE" -o "$TMP/on.jsonl" "$TMP/on.trace"
check "on: decodes cleanly" [ $? -eq 0 ]
j="$TMP/on.jsonl"
out="$TMP/on.out"
equal "on: dropped" "$(summary "$j" dropped)" 0

# how many waits a run needs depends on scheduling: all but the ground truth line must match
head -n -1 "$TMP/plain.out" >"$TMP/plain.head"
head -n -1 "$out" >"$TMP/on.head"
check "output unchanged by tracing" cmp -s "$TMP/plain.head" "$TMP/on.head"
check "old GLIBC_2.2.5 condvar calls went to glibc's compat code" \
    grep -q "compat code: yes" "$out"

path_count() { # path_count JSONL EVENT PATH
    jq -c --arg e "$2" --arg p "$3" 'select(.event == $e and .path == $p)' "$1" | wc -l
}

total=0
for p in cond sem futex cnd; do
    waits=$(truth "$out" "$p.waits")
    total=$((total + waits))
    equal "$p: park events = wait calls" "$(path_count "$j" park "$p")" "$waits"
    equal "$p: unpark events = wait calls" "$(path_count "$j" unpark "$p")" "$waits"
    equal "$p: wake events = wake-up calls" "$(path_count "$j" wake "$p")" "$(truth "$out" "$p.wakes")"
    # every thread's waits are park, unpark, park, unpark...; wakers and sleepers meet on the
    # object's address
    check "$p: each thread's park and unpark alternate" jq -n -e --arg p "$p" '
        [inputs | select(.path == $p and (.event == "park" or .event == "unpark"))]
        | group_by(.tid)
        | all(map(.event) | . as $e | [range(length)]
              | all($e[.] == (if . % 2 == 0 then "park" else "unpark" end)))' "$j"
    check "$p: parks and wakes name the same objects" jq -n -e --arg p "$p" '
        [inputs | select(.path == $p)] as $all
        | ($all | map(select(.event == "wake") | .peer) | unique) as $woken
        | ($all | map(select(.event == "park") | .peer) | unique) as $waited
        | ($woken | all(. > 0)) and ($waited - $woken) == []' "$j"
done
equal "no park beyond the program's own waits (the old ABI's are not wrapped)" \
    "$(kind_count "$j" park)" "$total"

# Both shims on: refrt's park and unpark wait and wake through syscall(SYS_futex), which the
# glibc shim wraps; inside the runtime's wrapper it records nothing, so each park is recorded
# once (no "futex" park or "wake" right after a "worker" park or unpark on the same thread).
ACTORTRACE_GLIBC=1 traced "$TMP/both.trace" "$B/examples/pingpong" 20000 >"$TMP/both.out" 2>&1
"$DECODE" -o "$TMP/both.jsonl" "$TMP/both.trace"
check "both shims: decodes cleanly" [ $? -eq 0 ]
check "both shims: the runtime parked ($(kind_count "$TMP/both.jsonl" park) parks)" \
    [ "$(kind_count "$TMP/both.jsonl" park)" -gt 0 ]
equal "both shims: glibc events inside the runtime's park or unpark" "$(jq -s '
    map(select(.event)) | group_by(.tid) | map(. as $t | range(1; length)
        | select($t[. - 1].path == "worker" and $t[.].path == "futex" and
                 [$t[. - 1].event, $t[.].event] as $pair
                 | $pair == ["park", "park"] or $pair == ["unpark", "wake"]))
    | length' "$TMP/both.jsonl")" 0

# A signal handler's sem_post (async-signal-safe, the usual way a handler wakes a thread),
# every 200 us while the main thread allocates without pause. When it is the shim's first
# call, the handler must not register the "wake" kind (the registry's lock and malloc may be
# what it interrupted: before, 5 runs in 8 hung): those wakes are dropped and counted. When
# the main thread posted first, the kinds are registered and every wake is recorded. A handler
# that interrupts the shim's own recording on its thread only forwards (the few per run that
# the counts below allow for). 10 runs of the first, 3 of the second.
W="$B/tests/progs/handler_wake"
bad=0
for run in $(seq 10); do
    ACTORTRACE_GLIBC=1 ACTORTRACE_OUT="$TMP/hw$run.trace" LD_PRELOAD="$LIB" timeout -s KILL 20 \
        "$W" first 150 >"$TMP/hw.out" 2>/dev/null &&
        "$DECODE" -o "$TMP/hw.jsonl" "$TMP/hw$run.trace" 2>/dev/null
    [ $? -le 1 ] && [ "$(summary "$TMP/hw.jsonl" dropped)" -ge $(($(truth "$TMP/hw.out" ticks) - 5)) ] ||
        bad=$((bad + 1))
done
equal "a handler's sem_post first: runs that hung, failed or did not count its wakes (of 10)" $bad 0
bad=0
for run in $(seq 3); do
    ACTORTRACE_GLIBC=1 ACTORTRACE_OUT="$TMP/hwa$run.trace" LD_PRELOAD="$LIB" timeout -s KILL 20 \
        "$W" after 150 >"$TMP/hwa.out" 2>/dev/null &&
        "$DECODE" -o "$TMP/hwa.jsonl" "$TMP/hwa$run.trace" 2>/dev/null &&
        [ "$(kind_count "$TMP/hwa.jsonl" wake)" -ge \
            $(($(truth "$TMP/hwa.out" ticks) + $(truth "$TMP/hwa.out" posts) - 5)) ] &&
        [ "$(summary "$TMP/hwa.jsonl" dropped)" -eq 0 ] || bad=$((bad + 1))
done
equal "a handler's sem_post after the main thread's: runs not recording its wakes (of 3)" $bad 0

# The first event comes from a thread whose pending cancellation ends it in that call (its
# sem_wait): the recorder it starts is not left half started (before: every later event
# waited for it, 3 runs in 3 hung).
bad=0
for run in $(seq 5); do
    ACTORTRACE_GLIBC=1 ACTORTRACE_OUT="$TMP/cf$run.trace" LD_PRELOAD="$LIB" timeout -s KILL 20 \
        "$B/tests/progs/cancel_first" >/dev/null 2>&1 &&
        "$DECODE" -o "$TMP/cf.jsonl" "$TMP/cf$run.trace" 2>/dev/null &&
        [ "$(kind_count "$TMP/cf.jsonl" park)" -ge 2 ] || bad=$((bad + 1))
done
equal "the first event on a thread being cancelled: runs that hung or failed (of 5)" $bad 0
