#!/bin/sh
# Where traces go: nothing is written without the preload, the default file name carries the
# pid, an existing file is never overwritten, and a trace that cannot be created leaves the
# program running unharmed with one line on stderr.
. "$(dirname "$0")/../lib.sh"
P="$B/examples/pingpong"

cd "$TMP" || exit 1
"$P" 100 >/dev/null
check "untraced: no file written" [ -z "$(ls -A "$TMP")" ]

LD_PRELOAD="$LIB" "$P" 100 >/dev/null 2>"$TMP/err"
check "default name actortrace-PID.trace" sh -c 'ls actortrace-*.trace | grep -Eq "^actortrace-[0-9]+\.trace$"'
check "default trace decodes" "$DECODE" -o /dev/null actortrace-*.trace
check "trace file mode is 0600" [ "$(stat -c %a actortrace-*.trace)" = 600 ]
rm -f actortrace-*.trace

ACTORTRACE_OUT="$TMP/p-%p.trace" LD_PRELOAD="$LIB" "$P" 100 >/dev/null &
pid=$!
wait $pid
check "%p is replaced by the pid" [ -f "$TMP/p-$pid.trace" ]

echo keep >"$TMP/existing"
ACTORTRACE_OUT="$TMP/existing" LD_PRELOAD="$LIB" "$P" 100 >"$TMP/out" 2>"$TMP/err"
check "existing file: program succeeds" [ $? -eq 0 ]
check "existing file: left untouched" [ "$(cat "$TMP/existing")" = keep ]
check "existing file: one line on stderr" [ "$(wc -l <"$TMP/err")" -eq 1 ]

ln -s "$TMP/target" "$TMP/link"
ACTORTRACE_OUT="$TMP/link" LD_PRELOAD="$LIB" "$P" 100 >/dev/null 2>&1
check "symlink: not followed" [ ! -e "$TMP/target" ]

ACTORTRACE_OUT=/nonexistent-dir/x.trace LD_PRELOAD="$LIB" "$P" 1000 >"$TMP/out" 2>"$TMP/err"
check "unwritable path: program succeeds" [ $? -eq 0 ]
check "unwritable path: output complete" [ "$(tail -n 1 "$TMP/out" | jq -r .ground_truth.send)" -gt 2000 ]
check "unwritable path: one clear line on stderr" grep -q "^actortrace: cannot create trace file /nonexistent-dir/x.trace" "$TMP/err"

ACTORTRACE_OUT="$TMP/s.trace" ACTORTRACE_MODE=sideways ACTORTRACE_BLOCK_KB=huge \
    ACTORTRACE_FROBNICATE=1 LD_PRELOAD="$LIB" "$P" 100 >/dev/null 2>"$TMP/err"
check "malformed mode reported" grep -q "ACTORTRACE_MODE=sideways" "$TMP/err"
check "malformed number reported" grep -q "ACTORTRACE_BLOCK_KB=huge" "$TMP/err"
check "unknown setting reported" grep -q "unknown setting ACTORTRACE_FROBNICATE" "$TMP/err"
check "settings reported once each" [ "$(wc -l <"$TMP/err")" -eq 3 ]
check "trace written despite bad settings" "$DECODE" -o /dev/null "$TMP/s.trace"

# ACTORTRACE_WRITER_NICE: the writer thread, and only it, runs that many nice levels lower
ACTORTRACE_WRITER_NICE=19 ACTORTRACE_OUT="$TMP/n.trace" LD_PRELOAD="$LIB_NOP" \
    "$B/tests/progs/crash" idle 1000 >/dev/null 2>"$TMP/n.err" &
pid=$!
nice_of() { awk '{ print $19 }' "$1" 2>/dev/null; } # the 19th field of a task's stat
writer_nice=none
for i in $(seq 200); do # the writer starts with the first event, and sets its nice value then
    task=$(grep -lx actortrace-w /proc/$pid/task/*/comm 2>/dev/null | head -n 1)
    [ -n "$task" ] && writer_nice=$(nice_of "${task%/comm}/stat")
    [ "$writer_nice" = 19 ] && break
    sleep 0.05
done
equal "ACTORTRACE_WRITER_NICE=19: the writer's nice value" "$writer_nice" 19
equal "ACTORTRACE_WRITER_NICE=19: the program's main thread's" "$(nice_of /proc/$pid/task/$pid/stat)" 0
kill -TERM $pid
wait $pid 2>/dev/null
check "ACTORTRACE_WRITER_NICE=19: the trace decodes" "$DECODE" -o /dev/null "$TMP/n.trace"
ACTORTRACE_WRITER_NICE=20 ACTORTRACE_OUT="$TMP/n20.trace" LD_PRELOAD="$LIB" "$P" 100 >/dev/null \
    2>"$TMP/n20.err"
check "ACTORTRACE_WRITER_NICE=20: reported" grep -q "ACTORTRACE_WRITER_NICE=20" "$TMP/n20.err"
