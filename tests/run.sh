#!/bin/sh
# Runs every test: the unit tests (built with ASan and UBSan), then each tests/e2e/*.sh. Each
# test prints "ok - NAME" or "not ok - NAME" lines; the last line of this script is
# "N passed, N failed", and it exits non-zero when anything failed. Each test has a time limit
# as a whole, beside those of the runs in it (tests/lib.sh, limit): a hang is a failure.
set -u
cd "$(dirname "$0")/.."
passed=0
failed=0
log=build/test-logs
rm -rf "$log"
mkdir -p "$log"

count() {
    # count "ok" and "not ok" lines of one test's output; a test that exits non-zero without
    # saying what failed counts as one failure
    out=$1 status=$2 name=$3
    ok=$(grep -c '^ok - ' "$out")
    bad=$(grep -c '^not ok - ' "$out")
    if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
        echo "not ok - $name exited with status $status (see $out)"
        bad=1
    fi
    if [ "$ok" -eq 0 ] && [ "$bad" -eq 0 ]; then
        echo "not ok - $name ran no check (see $out)"
        bad=1
    fi
    grep '^not ok - ' "$out"
    passed=$((passed + ok))
    failed=$((failed + bad))
}

for t in build/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    echo "# $name"
    timeout -s KILL 900 "$t" >"$log/$name.out" 2>&1
    count "$log/$name.out" $? "$name"
done

for t in tests/e2e/*.sh; do
    name=$(basename "$t" .sh)
    echo "# $name"
    timeout -s KILL 1800 sh "$t" >"$log/$name.out" 2>&1
    count "$log/$name.out" $? "$name"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
