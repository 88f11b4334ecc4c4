#!/bin/sh
# shimgen: a shim generated from a spec traces mbox (a runtime written for this test) exactly as
# its own log says; the one generated from refrt's spec counts what refrt counts and what the
# hand-written shim records, names its workers (register ... format) and keeps the glibc shim
# quiet inside its parks (guard); the worked examples on Debian's GLib and libuv count exactly what
# the programs count, and destroy functions get the program's data; a name no library defines
# is said at start-up, a prototype the header contradicts is given at its spec line; --help,
# actortrace list --shim and make install; every bad spec gets each of its mistakes, with its
# line, and nothing is generated from it. Generated shims are preloaded after the product
# library, which has no shim of its own for refrt.
. "$(dirname "$0")/../lib.sh"

SHIMGEN="$B/shimgen"
CORE="$PRODUCT_LIB"
SPECS="$TOP/tests/targets/shimgen"

generated() { # generated TRACE SHIM PROGRAM ARGS...: runs PROGRAM with the core and SHIM
    local trace="$1" shim="$2"
    shift 2
    limit env ACTORTRACE_OUT="$trace" LD_PRELOAD="$CORE:$shim" "$@"
}

# events JSONL: each event as {event, actor, peer, msg, msg_name}, sorted
events() {
    jq -c 'select(.event) | {event, actor, peer: (.sender // .peer // 0), msg: (.msg // 0),
                             msg_name: (.msg_name // "")}' "$1" | sort
}

# ---- mbox: the trace equals the runtime's own log, event for event ----
"$SHIMGEN" "$SPECS/mbox.spec" -o "$TMP/mbox" >"$TMP/mbox.gen" 2>&1
check "mbox: shimgen generates and builds the shim (-Wall -Wextra -Werror)" \
    [ $? -eq 0 -a -f "$TMP/mbox/libshim-mbox.so" ]
exported=$(nm -D --defined-only "$TMP/mbox/libshim-mbox.so" | awk '{print $3}' | grep '^mb_' |
    sort | tr '\n' ' ')
equal "mbox: the shim exports exactly the wrapped functions" "$exported" \
    "mb_exit mb_free mb_post mb_receive mb_send_named mb_spawn mb_stop "

generated "$TMP/mbox.trace" "$TMP/mbox/libshim-mbox.so" "$B/shimgen-test/mbox_demo" 2000 \
    >"$TMP/mbox.out" 2>"$TMP/mbox.err"
check "mbox: runs traced" [ $? -eq 0 ]
check "mbox: nothing on stderr" [ ! -s "$TMP/mbox.err" ]
"$DECODE" -o "$TMP/mbox.jsonl" "$TMP/mbox.trace"
check "mbox: decodes cleanly" [ $? -eq 0 ]
events "$TMP/mbox.jsonl" >"$TMP/mbox.got"
grep '^{"truth"' "$TMP/mbox.out" | jq -c '.truth' | sort >"$TMP/mbox.want"
equal "mbox: the runtime logged every operation" "$(wc -l <"$TMP/mbox.want")" 12027
check "mbox: the trace's events equal the runtime's log (actor, peer, msg, msg_name)" \
    cmp -s "$TMP/mbox.got" "$TMP/mbox.want"
for kind in spawn send recv step_begin step_end exit free; do
    equal "mbox: $kind events = ground truth" "$(kind_count "$TMP/mbox.jsonl" "$kind")" \
        "$(truth "$TMP/mbox.out" "$kind")"
done
equal "mbox: dropped" "$(summary "$TMP/mbox.jsonl" dropped)" 0
check "mbox: the spawned actors are named" jq -n -e \
    '[inputs | select(.event == "spawn") | .actor_name] | sort == ["helper", "pinger", "ponger"]' \
    "$TMP/mbox.jsonl"

# the same through the command: actortrace record --shim preloads the generated shim
limit "$B/actortrace" record --preload "$CORE" --shim "$TMP/mbox/libshim-mbox.so" -o "$TMP/cmd.trace" \
    -- "$B/shimgen-test/mbox_demo" 2000 >"$TMP/cmd.out" 2>"$TMP/cmd.err"
check "mbox through actortrace record --shim: runs traced" [ $? -eq 0 ]
"$DECODE" -o "$TMP/cmd.jsonl" "$TMP/cmd.trace"
events "$TMP/cmd.jsonl" >"$TMP/cmd.got"
grep '^{"truth"' "$TMP/cmd.out" | jq -c '.truth' | sort >"$TMP/cmd.want"
equal "mbox through actortrace record --shim: events" "$(wc -l <"$TMP/cmd.got")" 12027
check "mbox through actortrace record --shim: the trace's events equal the runtime's log" \
    cmp -s "$TMP/cmd.got" "$TMP/cmd.want"
limit "$B/actortrace" record --shim "$TMP/mbox.spec-missing.so" -- true 2>"$TMP/noshim.err"
equal "actortrace record --shim with no such library: refused" "$?" 125
check "actortrace record --shim with no such library: says which" \
    grep -q 'mbox.spec-missing.so: not a shared library' "$TMP/noshim.err"

awk '/^runtime mbox/ {p = 1} p && /^```$/ {exit} p' "$TOP/docs/SHIMGEN.md" >"$TMP/doc.spec"
sed -n '/^runtime mbox/,$p' "$SPECS/mbox.spec" | cmp -s - "$TMP/doc.spec"
check "docs/SHIMGEN.md shows mbox.spec as it is" [ $? -eq 0 ]
for name in glib uv; do
    awk -v start="^runtime $name\$" '$0 ~ start {p = 1} p && /^```$/ {exit} p' \
        "$TOP/docs/SHIMGEN.md" >"$TMP/doc-$name.spec"
    sed -n "/^runtime $name\$/,\$p" "$SPECS/$name.spec" | cmp -s - "$TMP/doc-$name.spec"
    check "docs/SHIMGEN.md shows $name.spec as it is" [ $? -eq 0 ]
done

# ---- refrt: its spec is the test copy's shim (--linked); a shim of its own counts the same ----
# The test copy of the library compiles what shimgen --linked writes from refrt's spec: its
# wrappers are those of every test on refrt (refrt.sh, patch.sh, ...).
(cd "$TOP" && "$SHIMGEN" --linked tests/targets/shimgen/refrt.spec -o "$TMP/linked") \
    >"$TMP/linked.gen" 2>&1
check "refrt --linked: writes the C and builds nothing" \
    [ $? -eq 0 -a -f "$TMP/linked/shim-refrt.c" -a ! -s "$TMP/linked.gen" -a ! -e "$TMP/linked/libshim-refrt.so" ]
check "refrt --linked: the test copy's shim is what shimgen writes from the spec" \
    cmp -s "$TMP/linked/shim-refrt.c" "$B/gen/shim-refrt.c"
equal "refrt --linked: the test copy exports the nine wrappers" \
    "$(nm -D --defined-only "$LIB" | awk '$3 ~ /^rt_/ {print $3}' | sort | tr '\n' ' ')" \
    "rt_exit rt_msg_type rt_park rt_receive rt_schedule rt_send rt_spawn rt_step rt_unpark "
check "refrt --linked: the test copy is no generated shim of its own (actortrace list)" \
    [ -z "$(nm -D --defined-only "$LIB" | grep actortrace_generated_shim)" ]
equal "refrt --linked: patchable, the registers of each result (rax for a value, none for void)" \
    "$(grep -o 'AT_PATCHABLE([a-z_]*, [A-Z_]*)' "$TMP/linked/shim-refrt.c" | tr '\n' ' ')" \
    "AT_PATCHABLE(rt_msg_type, AT_RETURN_RAX) AT_PATCHABLE(rt_spawn, AT_RETURN_RAX) \
AT_PATCHABLE(rt_send, AT_RETURNS_NOTHING) AT_PATCHABLE(rt_receive, AT_RETURN_RAX) \
AT_PATCHABLE(rt_step, AT_RETURN_RAX) AT_PATCHABLE(rt_schedule, AT_RETURNS_NOTHING) \
AT_PATCHABLE(rt_park, AT_RETURNS_NOTHING) AT_PATCHABLE(rt_unpark, AT_RETURNS_NOTHING) \
AT_PATCHABLE(rt_exit, AT_RETURNS_NOTHING) "
"$SHIMGEN" "$SPECS/refrt.spec" -o "$TMP/refused" >/dev/null 2>"$TMP/refused.err"
equal "refrt's spec as a shim of its own: refused, its functions are patchable" "$?" 1
check "refrt's spec as a shim of its own: says 'patchable' needs --linked" \
    grep -q "refrt.spec:[0-9]*: 'patchable' needs a shim linked into the library" "$TMP/refused.err"

# the same spec but for patchable, as a shim of its own, preloaded after the product
grep -v '^ *patchable' "$SPECS/refrt.spec" >"$TMP/refrt.spec"
"$SHIMGEN" "$TMP/refrt.spec" -o "$TMP/refrt" -I "$TOP/tests/targets/rt" >"$TMP/refrt.gen" 2>&1
check "refrt: shimgen generates and builds the shim" [ $? -eq 0 -a -f "$TMP/refrt/libshim-refrt.so" ]

# kinds JSONL: "kind count" per event kind, and sends per message name
kinds() {
    jq -r 'select(.event) | .event' "$1" | sort | uniq -c
    jq -r 'select(.event == "send") | .msg_name' "$1" | sort | uniq -c
}

# unshared JSONL: the pairs of one exchange on a thread (a recv and the step_begin right after
# it, a send and the schedule right after it, of one actor) with two timestamps
unshared() {
    jq -n '[inputs | select(.tid)] | group_by(.tid) | map([.[:-1], .[1:]] | transpose
        | map(select([.[0].event, .[1].event] | IN(["recv", "step_begin"], ["send", "schedule"]))
              | select(.[0].actor == .[1].actor and .[0].ts_ns != .[1].ts_ns)) | length) | add' "$1"
}
# blocks JSONL: the most unshared pairs there may be (as in refrt.sh): where the first event
# opened a block, the slow path stamps it itself; a block holds more than 1000 events, and each
# thread's first event opens one
blocks() {
    jq -n '[inputs | select(.tid) | .tid] | (length / 1000 | floor) + (unique | length)' "$1"
}

refrt_case() { # refrt_case NAME PROGRAM ARGS...
    name=$1
    shift
    generated "$TMP/$name.trace" "$TMP/refrt/libshim-refrt.so" "$@" >"$TMP/$name.out" \
        2>"$TMP/$name.err"
    check "refrt $name: runs traced by the generated shim" [ $? -eq 0 -a ! -s "$TMP/$name.err" ]
    "$DECODE" -o "$TMP/$name.jsonl" "$TMP/$name.trace"
    check "refrt $name: decodes cleanly" [ $? -eq 0 ]
    for kind in spawn send recv schedule park unpark exit; do
        equal "refrt $name: $kind events = ground truth" \
            "$(kind_count "$TMP/$name.jsonl" "$kind")" "$(truth "$TMP/$name.out" "$kind")"
    done
    for kind in step_begin step_end; do
        equal "refrt $name: $kind events = ground truth steps" \
            "$(kind_count "$TMP/$name.jsonl" "$kind")" "$(truth "$TMP/$name.out" step)"
    done
    equal "refrt $name: dropped" "$(summary "$TMP/$name.jsonl" dropped)" 0
    equal "refrt $name: every park and unpark names its worker, worker-N (register ... format)" \
        "$(jq -n '[inputs | select(.event == "park" or .event == "unpark")
                   | select(.actor_name != "worker-\(.actor - 1099511627776)")] | length' \
            "$TMP/$name.jsonl")" 0

    pairs=$(unshared "$TMP/$name.jsonl") most=$(blocks "$TMP/$name.jsonl")
    check "refrt $name: events of one exchange share a timestamp (stamp; $pairs pairs not, at \
most $most)" [ "$pairs" -le "$most" ]

    # the test copy on the same run: the same events of each deterministic kind and the same
    # sends per message name (schedule, park and unpark vary from run to run)
    traced "$TMP/$name.linked.trace" "$@" >"$TMP/$name.linked.out" 2>&1
    "$DECODE" -o "$TMP/$name.linked.jsonl" "$TMP/$name.linked.trace"
    kinds "$TMP/$name.jsonl" | grep -v ' schedule$\| park$\| unpark$' >"$TMP/$name.kinds"
    kinds "$TMP/$name.linked.jsonl" | grep -v ' schedule$\| park$\| unpark$' \
        >"$TMP/$name.linked.kinds"
    check "refrt $name: same counts per kind and per message name as the test copy" \
        cmp -s "$TMP/$name.kinds" "$TMP/$name.linked.kinds"
}
refrt_case pingpong "$B/examples/pingpong" 10000
refrt_case fanout "$B/examples/fanout" 4 20000
refrt_case ring "$B/examples/ring" 16 500
# guard: refrt's parks wait on a condition variable, which the glibc shim records unless an
# outer wrapper runs; the spec's rt_park and rt_unpark guard their calls, so it records none
glibc_parks() { # glibc_parks JSONL: refrt's parks that the glibc shim's park follows on the thread
    jq -n '[inputs | select(.tid)] | group_by(.tid) | map([.[:-1], .[1:]] | transpose
        | map(select(.[0].event == "park" and .[0].path == "worker" and .[1].event == "park"
                     and .[1].path != "worker")) | length) | add' "$1"
}
generated "$TMP/guard.trace" "$TMP/refrt/libshim-refrt.so" env ACTORTRACE_GLIBC=1 \
    "$B/examples/pingpong" 2000 >"$TMP/guard.out" 2>&1
"$DECODE" -o "$TMP/guard.jsonl" "$TMP/guard.trace"
equal "refrt guard: refrt's parks = ground truth, with the glibc shim on" \
    "$(jq -n '[inputs | select(.event == "park" and .path == "worker")] | length' \
        "$TMP/guard.jsonl")" "$(truth "$TMP/guard.out" park)"
equal "refrt guard: the glibc shim records no park inside rt_park" \
    "$(glibc_parks "$TMP/guard.jsonl")" 0
grep -v '^ *guard' "$TMP/refrt.spec" >"$TMP/unguarded.spec"
"$SHIMGEN" "$TMP/unguarded.spec" -o "$TMP/unguarded" -I "$TOP/tests/targets/rt" >/dev/null 2>&1
generated "$TMP/unguarded.trace" "$TMP/unguarded/libshim-refrt.so" env ACTORTRACE_GLIBC=1 \
    "$B/examples/pingpong" 2000 >"$TMP/unguarded.out" 2>&1
"$DECODE" -o "$TMP/unguarded.jsonl" "$TMP/unguarded.trace"
# (not in every one: rt_park waits only when no unpark came first)
check "refrt without guard: the glibc shim records the waits inside rt_park" \
    [ "$(glibc_parks "$TMP/unguarded.jsonl")" -gt 0 ]
grep -v '^ *stamp' "$TMP/refrt.spec" >"$TMP/unstamped.spec"
"$SHIMGEN" "$TMP/unstamped.spec" -o "$TMP/unstamped" -I "$TOP/tests/targets/rt" >/dev/null 2>&1
generated "$TMP/unstamped.trace" "$TMP/unstamped/libshim-refrt.so" "$B/examples/pingpong" 2000 \
    >/dev/null 2>&1
"$DECODE" -o "$TMP/unstamped.jsonl" "$TMP/unstamped.trace"
pairs=$(unshared "$TMP/unstamped.jsonl") most=$(blocks "$TMP/unstamped.jsonl")
check "refrt without 'stamp' lines: exchanges do not share ($pairs pairs not, more than $most)" \
    [ "$pairs" -gt "$most" ]
check "refrt: the PONGs are sent by the actor that handled the PING" jq -n -e '
    [inputs] as $all
    | ($all | map(select(.event == "step_begin" and .msg_name == "PING")) | .[0].actor) as $pong
    | $all | map(select(.event == "send" and .msg_name == "PONG")) | all(.sender == $pong)' \
    "$TMP/pingpong.jsonl"

# ---- GLib (Debian's): the worked example's counts equal the program's own ----
"$SHIMGEN" "$SPECS/glib.spec" -o "$TMP/glib" --program "$B/shimgen-test/glib_demo" \
    >"$TMP/glib.gen" 2>&1
check "glib: shimgen generates and builds the shim" [ $? -eq 0 -a -f "$TMP/glib/libshim-glib.so" ]
timeout 60 "$B/shimgen-test/glib_demo" 2000 200 >"$TMP/glib.untraced" 2>&1
equal "glib untraced: destroy functions got their own data" \
    "$(truth "$TMP/glib.untraced" destroyed_own)" 200
generated "$TMP/glib.trace" "$TMP/glib/libshim-glib.so" timeout 60 \
    "$B/shimgen-test/glib_demo" 2000 200 >"$TMP/glib.out" 2>"$TMP/glib.err"
check "glib: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/glib.err" ]
equal "glib traced: destroy functions got their own data (g_idle_add_full, g_source_set_callback)" \
    "$(truth "$TMP/glib.out" destroyed_own)" 200
equal "glib traced: destroy functions got no other pointer" \
    "$(truth "$TMP/glib.out" destroyed_other)" 0
"$DECODE" -o "$TMP/glib.jsonl" "$TMP/glib.trace"
check "glib: decodes cleanly" [ $? -eq 0 ]
named() { # named JSONL EVENT NAME: the number of EVENT events of message name NAME
    jq -n --arg e "$2" --arg n "$3" '[inputs | select(.event == $e and .msg_name == $n)] | length' "$1"
}
g="$TMP/glib.jsonl"
equal "glib pool: sends = pushes" "$(named "$g" send work)" "$(truth "$TMP/glib.out" pool_sends)"
equal "glib pool: steps = work items run" "$(named "$g" step_begin work)" \
    "$(truth "$TMP/glib.out" pool_steps)"
equal "glib pool: step ends" "$(named "$g" step_end work)" "$(truth "$TMP/glib.out" pool_steps)"
check "glib pool: sends and steps name the program's actor (1), through unwrap" jq -n -e \
    '[inputs | select(.msg_name == "work") | .actor] | unique == [1]' "$g"
equal "glib pool: one spawn, of actor 1" "$(jq -c 'select(.event == "spawn") | .actor' "$g")" 1
equal "glib queue: sends = pushes" "$(named "$g" send queue)" "$(truth "$TMP/glib.out" queue_sends)"
equal "glib queue: receives = pops" "$(named "$g" recv queue)" "$(truth "$TMP/glib.out" queue_recvs)"
equal "glib queue: a park before every pop" "$(kind_count "$g" park)" \
    "$(truth "$TMP/glib.out" queue_recvs)"
check "glib queue: each message received once, by the queue it was sent to" jq -n -e '
    [inputs | select(.msg_name == "queue")] as $q
    | ($q | map(select(.event == "send") | [.actor, .msg]) | sort)
      == ($q | map(select(.event == "recv") | [.actor, .msg]) | sort)' "$g"
equal "glib main context: sends = idles added" "$(named "$g" send idle)" \
    "$(truth "$TMP/glib.out" idle_sends)"
equal "glib main context: steps = idles run" "$(named "$g" step_begin idle)" \
    "$(truth "$TMP/glib.out" idle_steps)"
check "glib main context: idles are sent to the context whose loop runs them (not actor 0)" \
    jq -n -e '[inputs | select(.msg_name == "idle") | .actor] | unique | length == 1 and .[0] != 0' \
    "$g"
equal "glib: dropped" "$(summary "$g" dropped)" 0

# ---- libuv (Debian's): the worked example's counts equal the program's own ----
"$SHIMGEN" "$SPECS/uv.spec" -o "$TMP/uv" --program "$B/shimgen-test/uv_demo" >"$TMP/uv.gen" 2>&1
check "uv: shimgen generates and builds the shim" [ $? -eq 0 -a -f "$TMP/uv/libshim-uv.so" ]
generated "$TMP/uv.trace" "$TMP/uv/libshim-uv.so" timeout 60 "$B/shimgen-test/uv_demo" 20000 2000 \
    >"$TMP/uv.out" 2>"$TMP/uv.err"
check "uv: runs traced, nothing on stderr" [ $? -eq 0 -a ! -s "$TMP/uv.err" ]
equal "uv traced: every queued work ran and finished" "$(truth "$TMP/uv.out" works_done)" 2000
"$DECODE" -o "$TMP/uv.jsonl" "$TMP/uv.trace"
check "uv: decodes cleanly" [ $? -eq 0 ]
u="$TMP/uv.jsonl"
equal "uv: async sends = the program's (libuv's own left out by 'if')" "$(named "$u" send async)" \
    "$(truth "$TMP/uv.out" async_sends)"
equal "uv: work sends = requests queued" "$(named "$u" send work)" \
    "$(truth "$TMP/uv.out" works_queued)"
equal "uv: async callback steps = the callbacks run" "$(named "$u" step_begin async)" \
    "$(truth "$TMP/uv.out" async_calls)"
equal "uv: work steps = work callbacks run" "$(named "$u" step_begin work)" \
    "$(truth "$TMP/uv.out" works_run)"
equal "uv: after-work steps = after-work callbacks run" "$(named "$u" step_begin done)" \
    "$(truth "$TMP/uv.out" works_done)"
for name in async work done; do
    equal "uv: $name steps end" "$(named "$u" step_end "$name")" "$(named "$u" step_begin "$name")"
done
equal "uv: one spawn, the program's async handle (libuv's own is not wrapped)" \
    "$(jq -c 'select(.event == "spawn") | .actor' "$u")" 2
check "uv: async events name the actor in handle->data (2), work events req->data's (3)" jq -n -e '
    [inputs | select(.msg_name) | [.msg_name, .actor]] | unique
    == [["async", 2], ["done", 3], ["work", 3]]' "$u"
check "uv: work is queued by the loop's actor (current during uv_run), async sent from outside" \
    jq -n -e '[inputs | select(.event == "send") | [.msg_name, ((.sender // 0) != 0)]] | unique
    == [["async", false], ["work", true]]' "$u"
equal "uv: dropped" "$(summary "$u" dropped)" 0

# ---- a wrapped name that no library defines: said once at start-up ----
cat >"$TMP/misnamed.spec" <<'EOF'
runtime misnamed
function g_async_queue_push
    proto void g_async_queue_push(void *queue, void *data)
    event send
    actor queue
function g_async_queue_pushh
    proto void g_async_queue_pushh(void *queue, void *data)
    event send
    actor queue
EOF
"$SHIMGEN" "$TMP/misnamed.spec" -o "$TMP/misnamed" >/dev/null 2>&1
generated "$TMP/misnamed.trace" "$TMP/misnamed/libshim-misnamed.so" timeout 60 \
    "$B/shimgen-test/glib_demo" 100 10 >"$TMP/misnamed.out" 2>"$TMP/misnamed.err"
check "a name no library defines: the program runs" [ $? -eq 0 ]
equal "a name no library defines: the shim says so once, naming it" \
    "$(grep -c 'shim misnamed: defined by no loaded library, never traced: g_async_queue_pushh$' \
        "$TMP/misnamed.err")" 1
generated "$TMP/none.trace" "$TMP/misnamed/libshim-misnamed.so" timeout 60 true 2>"$TMP/none.err"
check "a process without the runtime: the shim says nothing" [ ! -s "$TMP/none.err" ]
"$SHIMGEN" "$SPECS/glib.spec" -o "$TMP/glib-program" --program "$B/shimgen-test/mbox_demo" \
    >/dev/null 2>"$TMP/program.err"
equal "--program: a program that imports none of the functions: refused" $? 1
check "--program: says which function the program does not import, with its line" \
    grep -q "glib.spec:[0-9]*: $B/shimgen-test/mbox_demo does not import g_idle_add_full" \
    "$TMP/program.err"

# ---- a prototype the header contradicts: the compiler's words, at the function's line ----
cat >"$TMP/conflict.spec" <<'EOF'
runtime conflict
pkg glib-2.0
include <glib.h>

function g_async_queue_push
    proto void g_async_queue_push(void *queue, int data)
    event send
    actor queue
EOF
"$SHIMGEN" "$TMP/conflict.spec" -o "$TMP/conflict" >/dev/null 2>"$TMP/conflict.err"
equal "a prototype the header contradicts: a mistake of the spec's (exit status 1)" $? 1
check "a prototype the header contradicts: SPEC:LINE of the function, the compiler's words" \
    grep -q "^$TMP/conflict.spec:5: error: conflicting types for .g_async_queue_push.; have" \
    "$TMP/conflict.err"

# ---- the tools around it: --help, actortrace list --shim, make install ----
"$SHIMGEN" --help >"$TMP/help.txt"
check "shimgen --help: gives the exit statuses" grep -q '^Exit status: 0 done; 1 the spec has' \
    "$TMP/help.txt"
check "shimgen --help: points at the docs" grep -q 'shimgen(1), and docs/SHIMGEN.md' "$TMP/help.txt"
limit "$B/actortrace" list --shim "$TMP/uv/libshim-uv.so" --shim "$CORE" "$B/shimgen-test/uv_demo" \
    >"$TMP/list.out" 2>&1
equal "actortrace list --shim: exit status" $? 0
equal "actortrace list --shim: a generated shim is a row, SHIM yes" \
    "$(awk '$1 == "uv" {print $2, $3, $5}' "$TMP/list.out")" "(--shim) yes $TMP/uv/libshim-uv.so"
equal "actortrace list --shim: another library is not a generated shim" \
    "$(awk '$1 == "libactortrace.so" {print $3}' "$TMP/list.out")" no
make -s -C "$TOP" install PREFIX="$TMP/inst" >"$TMP/install.out" 2>&1
check "make install: installs shimgen and its man page" \
    [ -x "$TMP/inst/bin/shimgen" -a -f "$TMP/inst/share/man/man1/shimgen.1" ]
"$TMP/inst/bin/shimgen" "$SPECS/mbox.spec" -o "$TMP/inst-mbox" >"$TMP/inst-gen.out" 2>&1
check "installed shimgen: builds a shim" [ $? -eq 0 -a -f "$TMP/inst-mbox/libshim-mbox.so" ]
check "installed shimgen: against the installed headers" \
    grep -q -- "-I$TMP/inst/include/actortrace " "$TMP/inst-gen.out"
ACTORTRACE_OUT="$TMP/inst.trace" \
    LD_PRELOAD="$TMP/inst/lib/actortrace/libactortrace.so:$TMP/inst-mbox/libshim-mbox.so" timeout 60 "$B/shimgen-test/mbox_demo" 200 >"$TMP/inst.out" 2>&1
"$DECODE" -o "$TMP/inst.jsonl" "$TMP/inst.trace"
equal "installed shimgen: its shim traces every send" "$(kind_count "$TMP/inst.jsonl" send)" \
    "$(truth "$TMP/inst.out" send)"
make -s -C "$TOP" uninstall PREFIX="$TMP/inst" >/dev/null 2>&1
check "make uninstall: removes shimgen" [ ! -e "$TMP/inst/bin/shimgen" ]

# ---- shimgen built with ASan and UBSan: the same C from the good specs, clean runs on all ----
# (it frees nothing before it exits, by design: leaks are not what this looks for)
for spec in "$SPECS"/*.spec "$SPECS"/bad/*.spec; do
    name=$(basename "$spec" .spec)
    ASAN_OPTIONS=detect_leaks=0 "$B/asan/shimgen" "$spec" -o "$TMP/asan-$name" --no-build \
        >/dev/null 2>"$TMP/asan-$name.err"
    check "sanitized shimgen on $name: exit status 0 or 1" [ $? -le 1 ]
    equal "sanitized shimgen on $name: sanitizer reports" \
        "$(grep -c 'Sanitizer\|runtime error' "$TMP/asan-$name.err")" 0
done
check "sanitized shimgen writes the same mbox shim" \
    cmp -s "$TMP/asan-mbox/shim-mbox.c" "$TMP/mbox/shim-mbox.c"
(cd "$TOP" && ASAN_OPTIONS=detect_leaks=0 "$B/asan/shimgen" --linked \
    tests/targets/shimgen/refrt.spec -o "$TMP/asan-linked" >/dev/null 2>"$TMP/asan-linked.err")
equal "sanitized shimgen --linked on refrt: sanitizer reports" \
    "$(grep -c 'Sanitizer\|runtime error' "$TMP/asan-linked.err")" 0
check "sanitized shimgen writes the same linked refrt shim" \
    cmp -s "$TMP/asan-linked/shim-refrt.c" "$TMP/linked/shim-refrt.c"

# ---- bad specs: every mistake, with its line, and nothing else; nothing generated ----
# (bad/linked-*.spec are written for a shim linked into the library: shimgen --linked)
for spec in "$SPECS"/bad/*.spec; do
    name=bad/$(basename "$spec")
    linked=
    case $name in bad/linked-*) linked=--linked ;; esac
    "$SHIMGEN" "$spec" -o "$TMP/bad" $linked >/dev/null 2>"$TMP/bad.err"
    equal "$name: exit status" $? 1
    check "$name: nothing generated" [ ! -e "$TMP/bad" ]
    sed -n 's/^# error: //p' "$spec" >"$TMP/bad.want"
    grep -v '^shimgen: ' "$TMP/bad.err" | sed "s|^$spec:||" >"$TMP/bad.got"
    check "$name: reports each of its $(wc -l <"$TMP/bad.want") mistakes as FILE:LINE: message" \
        cmp -s "$TMP/bad.got" "$TMP/bad.want"
    [ -s "$TMP/bad.want" ] || echo "not ok - $name lists no expected mistake"
done
