#!/bin/sh
# Processes made by a traced process. A forked child writes its own file with its own events
# and none of its parent's; an exec'd image writes its own file; vfork and posix_spawn children
# never touch the parent's trace; tracedecode merges several files on one timeline.
. "$(dirname "$0")/../lib.sh"
P="$B/tests/progs/forker"
N=3000

run() { # run NAME MODE: traces forker MODE into $TMP/NAME/
    mkdir -p "$TMP/$1"
    limit env ACTORTRACE_OUT="$TMP/$1/%p.trace" LD_PRELOAD="$LIB_NOP" "$P" "$2" $N >"$TMP/$1.out" 2>"$TMP/$1.err"
}

run fork fork
check "fork: program succeeds" [ $? -eq 0 ]
check "fork: two trace files" [ "$(ls "$TMP/fork" | wc -l)" -eq 2 ]
parent=$(ls "$TMP/fork" | sort -n | head -n 1)
child=$(ls "$TMP/fork" | sort -n | tail -n 1)
"$DECODE" -o "$TMP/parent.jsonl" "$TMP/fork/$parent"
check "fork: parent's trace complete" [ $? -eq 0 ]
"$DECODE" -o "$TMP/child.jsonl" "$TMP/fork/$child"
check "fork: child's trace complete" [ $? -eq 0 ]
equal "fork: parent has its sends" "$(sends_of "$TMP/parent.jsonl" 1)" "$(truth "$TMP/fork.out" send)"
equal "fork: parent has none of the child's" "$(sends_of "$TMP/parent.jsonl" 2)" 0
equal "fork: child has its sends" "$(sends_of "$TMP/child.jsonl" 2)" "$(truth "$TMP/fork.out" child_send)"
equal "fork: child has none of the parent's" "$(sends_of "$TMP/child.jsonl" 1)" 0
"$DECODE" -o "$TMP/both.jsonl" "$TMP/fork/$parent" "$TMP/fork/$child"
check "fork: both files merge" [ $? -eq 0 ]
equal "fork: merged has every send" "$(kind_count "$TMP/both.jsonl" send)" $((3 * N))
equal "fork: merged events carry both pids" \
    "$(jq -r 'select(.event) | .pid' "$TMP/both.jsonl" | sort -u | tr '\n' ' ')" \
    "$(printf '%s\n%s\n' "${parent%.trace}" "${child%.trace}" | sort -u | tr '\n' ' ')"

limit env ACTORTRACE_OUT="$TMP/fixed.trace" LD_PRELOAD="$LIB_NOP" "$P" fork $N >/dev/null 2>&1
check "fork without %p: the child appends its pid" sh -c "ls '$TMP'/fixed.trace.* >/dev/null"

run exec exec
check "exec: program succeeds" [ $? -eq 0 ]
first=$(ls "$TMP/exec" | grep -v '\.1$')
check "exec: the new image has its own file" [ -f "$TMP/exec/$first.1" ]
"$DECODE" -o "$TMP/before.jsonl" "$TMP/exec/$first"
check "exec: the image before exec ends cleanly" [ $? -eq 0 ]
"$DECODE" -o "$TMP/after.jsonl" "$TMP/exec/$first.1"
check "exec: the new image's trace is complete" [ $? -eq 0 ]
equal "exec: sends before exec" "$(sends_of "$TMP/before.jsonl" 1)" $N
equal "exec: sends of the new image" "$(sends_of "$TMP/after.jsonl" 3)" "$(truth "$TMP/exec.out" image_send)"

# without %p: the name the first image took is taken for the new one, which appends .1
mkdir -p "$TMP/fixed_exec"
ACTORTRACE_OUT="$TMP/fixed_exec/x.trace" LD_PRELOAD="$LIB_NOP" "$P" exec $N \
    >"$TMP/fixed_exec.out" 2>"$TMP/fixed_exec.err"
check "exec without %p: program succeeds" [ $? -eq 0 ]
check "exec without %p: nothing said" [ ! -s "$TMP/fixed_exec.err" ]
"$DECODE" -o "$TMP/fixed_after.jsonl" "$TMP/fixed_exec/x.trace.1"
check "exec without %p: the new image's trace is complete" [ $? -eq 0 ]
equal "exec without %p: sends of the new image" "$(sends_of "$TMP/fixed_after.jsonl" 3)" \
    "$(truth "$TMP/fixed_exec.out" image_send)"
# a file left by an earlier run (older than the process) is not an earlier image's: refused
touch -d '1 minute ago' "$TMP/stale.trace"
ACTORTRACE_OUT="$TMP/stale.trace" LD_PRELOAD="$LIB_NOP" "$P" exec 10 >/dev/null 2>"$TMP/stale.err"
check "a file of an earlier run: refused" grep -q 'stale.trace (File exists); not tracing' \
    "$TMP/stale.err"
check "a file of an earlier run: no .1 made" [ ! -e "$TMP/stale.trace.1" ]

# _Fork() runs no atfork handler: the child records nothing (a recorder of its own would need
# malloc, unsafe there), writes nothing into its parent's buffer, and its exit() runs its exit
# handlers (before, it took the child for a vfork child's and left with _exit, and its sends
# went into the parent's ring: 6,544 events and 193,457 dropped in the parent's trace)
run _Fork _Fork
check "_Fork: program succeeds" [ $? -eq 0 ]
check "_Fork: one trace file (the parent's)" [ "$(ls "$TMP/_Fork" | wc -l)" -eq 1 ]
"$DECODE" -o "$TMP/_Fork.jsonl" "$TMP/_Fork"/*.trace
check "_Fork: parent's trace complete" [ $? -eq 0 ]
equal "_Fork: parent has every send" "$(sends_of "$TMP/_Fork.jsonl" 1)" 6000
equal "_Fork: parent has none of the child's" "$(sends_of "$TMP/_Fork.jsonl" 2)" 0
equal "_Fork: nothing dropped" "$(summary "$TMP/_Fork.jsonl" dropped)" 0
equal "_Fork: the exit handlers ran in both processes" "$(grep -c 'exit handler ran' "$TMP/_Fork.out")" 2

for mode in vfork vfork_exit spawn; do
    run "$mode" "$mode"
    check "$mode: program succeeds" [ $? -eq 0 ]
    check "$mode: one trace file (the child, /bin/true, records nothing)" [ "$(ls "$TMP/$mode" | wc -l)" -eq 1 ]
    "$DECODE" -o "$TMP/$mode.jsonl" "$TMP/$mode"/*.trace
    check "$mode: parent's trace complete" [ $? -eq 0 ]
    equal "$mode: parent's trace has its end record" "$(summary "$TMP/$mode.jsonl" truncated)" false
    equal "$mode: parent has every send" "$(sends_of "$TMP/$mode.jsonl" 1)" "$(truth "$TMP/$mode.out" send)"
done
equal "vfork_exit: the exit handler ran once, in the parent" "$(sends_of "$TMP/vfork_exit.jsonl" 4)" 1
