#!/bin/sh
# make demo: traces the reference runtime's pingpong, decodes the trace, and shows what it
# holds.
set -eu
cd "$(dirname "$0")/.."
trace=build/demo.trace
rm -f "$trace" build/demo.jsonl
echo "\$ ACTORTRACE_OUT=$trace LD_PRELOAD=build/tests/libactortrace-refrt.so build/examples/pingpong 10000"
ACTORTRACE_OUT=$trace LD_PRELOAD=build/tests/libactortrace-refrt.so build/examples/pingpong 10000
echo
echo "\$ build/tracedecode -o build/demo.jsonl $trace"
build/tracedecode -o build/demo.jsonl "$trace"
echo "\$ head -n 8 build/demo.jsonl"
head -n 8 build/demo.jsonl
echo "\$ tail -n 1 build/demo.jsonl"
tail -n 1 build/demo.jsonl
echo
echo "\$ jq -s 'map(select(.event == \"send\")) | group_by(.msg_name) | map({(.[0].msg_name): length}) | add' build/demo.jsonl"
jq -c -s 'map(select(.event == "send")) | group_by(.msg_name) | map({(.[0].msg_name): length}) | add' build/demo.jsonl
echo
echo "trace: $trace ($(stat -c %s "$trace") bytes), JSONL: build/demo.jsonl"
