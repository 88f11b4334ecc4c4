#!/bin/sh
# Signal handlers that record on the thread they interrupted: nothing is lost, counted twice
# or torn, and the interrupted thread's own events keep their order. (Block mode: the loop
# records faster than any writer can write, and the test is about the handlers, not drops.)
. "$(dirname "$0")/../lib.sh"

ACTORTRACE_MODE=block ACTORTRACE_OUT="$TMP/s.trace" LD_PRELOAD="$LIB_NOP" \
    "$B/tests/progs/sigrec" 3000000 >"$TMP/s.out" 2>"$TMP/s.err"
check "runs traced" [ $? -eq 0 ]
"$DECODE" -o "$TMP/s.jsonl" "$TMP/s.trace"
check "decodes cleanly" [ $? -eq 0 ]
handled=$(truth "$TMP/s.out" handler_send)
check "the timer interrupted the loop ($handled times)" [ "$handled" -gt 10 ]
equal "every send is in the trace" "$(kind_count "$TMP/s.jsonl" send)" "$(truth "$TMP/s.out" send)"
equal "every handler's send is in the trace" "$(sends_of "$TMP/s.jsonl" 2)" "$handled"
equal "no torn slot" "$(summary "$TMP/s.jsonl" torn)" 0
equal "dropped" "$(summary "$TMP/s.jsonl" dropped)" 0
check "the loop's sends are in order, each once" jq -n -e '
    reduce (inputs | select(.event == "send" and .actor == 1) | .msg // 0) as $m
        ({ok: true, next: 0}; {ok: (.ok and $m == .next), next: ($m + 1)}) | .ok' "$TMP/s.jsonl"
check "the handler's sends are in order, each once" jq -n -e '
    reduce (inputs | select(.event == "send" and .actor == 2) | .msg) as $m
        ({ok: true, next: 1}; {ok: (.ok and $m == .next), next: ($m + 1)}) | .ok' "$TMP/s.jsonl"
