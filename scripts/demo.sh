#!/bin/sh
# make demo: what a user does, on a CZMQ actor ping-pong (a program of a runtime the library
# traces, run with the product library): record a run, read its statistics, write the view for
# Perfetto, and answer a question with jq, as README.md's "Tracing a program" shows.
set -eu
cd "$(dirname "$0")/.."
dir=build/demo
rm -rf "$dir"
mkdir -p "$dir"
show() { # show COMMAND...: prints the command, then runs it
    echo "\$ $*"
    "$@"
}
show build/actortrace record -o $dir/run.trace -- build/tests/czmq/pingpong zstr 10000
echo
echo "\$ build/actortrace report $dir/run.trace | head -n 20"
build/actortrace report $dir/run.trace | head -n 20
echo
show build/actortrace view $dir/run.trace
echo
echo "\$ build/actortrace decode $dir/run.trace > $dir/run.jsonl"
build/actortrace decode $dir/run.trace >$dir/run.jsonl
recipe='map(select(.event == "send")) | group_by(.msg_name) | map({(.[0].msg_name): length}) | add'
echo "\$ jq -c -s '$recipe' $dir/run.jsonl"
jq -c -s "$recipe" $dir/run.jsonl
