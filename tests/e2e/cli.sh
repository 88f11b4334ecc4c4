#!/bin/sh
# The actortrace command on the reference runtime's programs: record (settings reach the
# recorder, the program's exit status passes through, the trace and its summary are reported,
# the files of forked children too), every refusal with its message and status, report, view,
# decode and list against tracedecode and the ELF files; make install into a temporary DESTDIR
# and the installed command, library and headers; the man pages lint clean.
. "$(dirname "$0")/../lib.sh"
# The library the command preloads here: the one that traces refrt.
TRACER_LIB="$LIB"
export ACTORTRACE_LIB="$TRACER_LIB"
AT="$B/actortrace"
PP="$B/examples/pingpong"
ENDS="$B/tests/progs/ends"
cd "$TMP" || exit 1

# status NAME WANT COMMAND...: runs COMMAND with its output in NAME.out and NAME.err, and
# checks its exit status
status() {
    local name="$1" want="$2"
    shift 2
    "$@" >"$name.out" 2>"$name.err"
    equal "$name: exit status $want" "$?" "$want"
}

says() { # says NAME FILE TEXT: FILE has a line that holds TEXT
    check "$1" grep -qF -- "$3" "$2"
}

trace_line() { # trace_line JSONL FILE: the line record writes about a complete trace
    echo "actortrace: trace: $2: $(summary "$1" events) events, $(summary "$1" dropped) dropped"
}

# --- record: a traced run, its trace and its summary
status "record pingpong" 0 "$AT" record -o pp.trace -- "$PP" 1000
"$DECODE" -o pp.jsonl pp.trace
check "record pingpong: the trace decodes clean" [ $? -eq 0 ]
equal "record pingpong: the trace has every send" "$(kind_count pp.jsonl send)" \
    "$(truth "record pingpong.out" send)"
equal "record pingpong: stderr names the trace, its events and drops" \
    "$(grep '^actortrace: trace' "record pingpong.err")" "$(trace_line pp.jsonl pp.trace)"

status "record, default name" 0 "$AT" record "$PP" 100
name=$(ls actortrace-*.trace)
check "record, default name: actortrace-PID.trace" [ -f "$name" ]
says "record, default name: said" "record, default name.err" "actortrace: trace: $name: "

# every option reaches the program as the recorder's variable; ACTORTRACE_LIB does not
status "record, settings" 0 "$AT" record -o 'set-%p.trace' --mode block --buffer 8 --block 16 \
    --ring-dir "$TMP" --zstd-level 3 --glibc --no-patch --stacks send,spawn --stack-depth 32 \
    --stack-every 1073741824 --writer-nice 19 -- env
for v in ACTORTRACE_OUT=set-%p.trace ACTORTRACE_MODE=block ACTORTRACE_BUFFER_MB=8 \
    ACTORTRACE_BLOCK_KB=16 ACTORTRACE_RING_DIR="$TMP" ACTORTRACE_ZSTD_LEVEL=3 \
    ACTORTRACE_WRITER_NICE=19 \
    ACTORTRACE_GLIBC=1 ACTORTRACE_PATCH=0 ACTORTRACE_STACKS=send,spawn \
    ACTORTRACE_STACK_DEPTH=32 ACTORTRACE_STACK_EVERY=1073741824 LD_PRELOAD="$TRACER_LIB"; do
    says "record, settings: $v" "record, settings.out" "$v"
done
check "record, settings: ACTORTRACE_LIB is not passed on" \
    sh -c "! grep -q '^ACTORTRACE_LIB=' 'record, settings.out'"
says "record, settings: a program that records nothing is said to" "record, settings.err" \
    "actortrace: no trace was written: env recorded no event"
says "record, settings: and why" "record, settings.err" \
    "actortrace: it links none of the runtimes the library traces"
status "record, stacks all" 0 "$AT" record --stacks all -- env
says "record, stacks all: ACTORTRACE_STACKS=all" "record, stacks all.out" "ACTORTRACE_STACKS=all"

# --stacks is used: each send of pingpong carries its call stack
status "record, stacks" 0 "$AT" record -o stacks.trace --stacks send --stack-depth 4 -- "$PP" 200
"$DECODE" -o stacks.jsonl stacks.trace
equal "record, stacks: the trace decodes clean" "$?" 0
equal "record, stacks: every send has a stack" \
    "$(jq -c 'select(.event == "send" and (.stack | length) > 0)' stacks.jsonl | wc -l)" \
    "$(truth "record, stacks.out" send)"
equal "record, stacks: no other kind has one" \
    "$(jq -c 'select(.event != "send" and .stack)' stacks.jsonl | wc -l)" 0
equal "record, stacks: at most --stack-depth frames" \
    "$(jq -c 'select(.stack) | .stack | length' stacks.jsonl | sort -n | tail -1)" 4
LD_PRELOAD=/nonexistent-first.so status "record, LD_PRELOAD kept" 0 "$AT" record -- env
says "record, LD_PRELOAD kept: before the library" "record, LD_PRELOAD kept.out" \
    "LD_PRELOAD=/nonexistent-first.so:$TRACER_LIB"

# the settings are used: the ring file of a killed run is in --ring-dir
mkdir ring
status "record, killed" 137 "$AT" record -o killed.trace --ring-dir "$TMP/ring" -- "$ENDS" 500 -9
says "record, killed: said, with the signal" "record, killed.err" \
    "actortrace: $ENDS was killed by signal 9 (SIGKILL); exiting with status 137"
says "record, killed: the trace recovered from the ring in --ring-dir" "record, killed.err" \
    "from the ring file $TMP/ring/"
says "record, killed: the summary says truncated" "record, killed.err" \
    ", truncated (not ended cleanly)"
rm -f ring/*

# --- the traced program's exit status
for end in 0 3 -15; do
    want=$end
    [ "$end" -lt 0 ] && want=$((128 - end))
    status "record, program ends $end" "$want" "$AT" record -o "end$end.trace" -- "$ENDS" 300 "$end"
    "$DECODE" -o "end$end.jsonl" "end$end.trace"
    equal "record, program ends $end: the trace is complete" "$?" 0
    equal "record, program ends $end: every send" "$(kind_count "end$end.jsonl" send)" \
        "$(truth "record, program ends $end.out" send)"
    equal "record, program ends $end: stderr" "$(grep '^actortrace: trace' "record, program ends $end.err")" \
        "$(trace_line "end$end.jsonl" "end$end.trace")"
done
says "record, program ends 3: said" "record, program ends 3.err" \
    "actortrace: $ENDS exited with status 3"
says "record, program ends -15: said" "record, program ends -15.err" \
    "actortrace: $ENDS was killed by signal 15 (SIGTERM); exiting with status 143"
check "record, program ends 0: nothing said of the status" \
    sh -c "! grep -q 'status' 'record, program ends 0.err'"

# SIGTERM sent to the command reaches the program, which finishes its trace
"$AT" record -o term.trace -- "$PP" 1000000000 >term.out 2>term.err &
at_pid=$!
for _ in $(seq 100); do [ -s term.trace ] && break; sleep 0.1; done
kill -TERM $at_pid
wait $at_pid
equal "record, SIGTERM to the command: exit status 143" "$?" 143
"$DECODE" -o term.jsonl term.trace
equal "record, SIGTERM to the command: the program's trace is complete" "$?" 0
says "record, SIGTERM to the command: said" term.err "was killed by signal 15 (SIGTERM)"

# a forked child's file is found and counted, through another library given with --preload
status "record, forked child" 0 "$AT" record --preload "$LIB_NOP" -o fork.trace -- \
    "$B/tests/progs/forker" fork 1000
child=$(ls fork.trace.* 2>/dev/null)
check "record, forked child: two files" [ -n "$child" ]
"$DECODE" -o fork.jsonl fork.trace $child
"$DECODE" -o fork0.jsonl fork.trace
"$DECODE" -o fork1.jsonl $child
equal "record, forked child: stderr names both, each with its events" \
    "$(grep '^actortrace: trace' "record, forked child.err")" \
    "$(trace_line fork0.jsonl fork.trace; trace_line fork1.jsonl "$child")"
equal "record, forked child: every send of both" "$(kind_count fork.jsonl send)" 3000

# a program that execs another: each image has a file of its own (the second FILE.1, since the
# name has no %p), and record names both, each with its own events and drops
status "record, exec" 0 "$AT" record --preload "$LIB_NOP" -o exec.trace -- \
    "$B/tests/progs/forker" exec 1000
check "record, exec: the new image's file" [ -f exec.trace.1 ]
"$DECODE" -o exec0.jsonl exec.trace
"$DECODE" -o exec1.jsonl exec.trace.1
equal "record, exec: the first image's sends" "$(kind_count exec0.jsonl send)" 1000
equal "record, exec: the new image's sends" "$(kind_count exec1.jsonl send)" \
    "$(truth "record, exec.out" image_send)"
equal "record, exec: stderr names each file with its events and drops" \
    "$(grep '^actortrace: trace' "record, exec.err")" \
    "$(trace_line exec0.jsonl exec.trace; trace_line exec1.jsonl exec.trace.1)"
check "record, exec: no complaint of a taken name" sh -c "! grep -q 'exists' 'record, exec.err'"

# a launcher that execs the program records nothing and leaves no file: the program's trace
# has the name given, and record reports it
status "record sh -c 'exec prog'" 0 "$AT" record -o shexec.trace -- sh -c "exec '$PP' 300"
"$DECODE" -o shexec.jsonl shexec.trace
equal "record sh -c 'exec prog': the program's trace, named as given" \
    "$(kind_count shexec.jsonl send)" "$(truth "record sh -c 'exec prog'.out" send)"
equal "record sh -c 'exec prog': reported" "$(grep '^actortrace: trace' "record sh -c 'exec prog'.err")" \
    "$(trace_line shexec.jsonl shexec.trace)"
check "record sh -c 'exec prog': one file" [ "$(ls shexec.trace* | wc -l)" -eq 1 ]

# a script is run, and the program it starts is traced
printf '#!/bin/sh\nexec "%s" 300\n' "$PP" >script.sh
chmod +x script.sh
status "record a script" 0 "$AT" record -o script.trace -- ./script.sh
"$DECODE" -o script.jsonl script.trace
equal "record a script: the program it runs is traced" "$(kind_count script.jsonl send)" \
    "$(truth "record a script.out" send)"

# --- refusals: each before the program runs, with its message and status
refused() { # refused NAME STATUS MESSAGE COMMAND...
    local name="$1" want="$2" message="$3"
    shift 3
    status "$name" "$want" "$@"
    says "$name: says why" "$name.err" "$message"
    check "$name: the program did not run" [ ! -s "$name.out" ]
}
refused "refuse a missing program" 127 "actortrace: no-such-program: program not found in PATH" \
    "$AT" record -o none.trace -- no-such-program
refused "refuse a missing path" 127 "actortrace: ./no-such-file: program not found" \
    "$AT" record -o none.trace -- ./no-such-file
printf 'int main(void) { return 0; }\n' >static.c
cc -static -o static static.c
refused "refuse a static program" 126 "actortrace: ./static is statically linked (no PT_INTERP)" \
    "$AT" record -o none.trace -- ./static
cp "$PP" noexec && chmod 644 noexec
refused "refuse a program that is not executable" 126 "actortrace: ./noexec: Permission denied" \
    "$AT" record -o none.trace -- ./noexec
# a directory is not a program: refused, in one line (before: it ran, the shell's "cannot run",
# and three lines about a trace and runtimes that were never in question)
mkdir -p adir
refused "refuse a directory" 126 "actortrace: ./adir: Is a directory" \
    "$AT" record -o none.trace -- ./adir
equal "refuse a directory: one line" "$(wc -l <"refuse a directory.err")" 1
refused "refuse an unknown option" 125 \
    "actortrace record: unknown option '--stack' (actortrace record --help lists the options)" \
    "$AT" record -o none.trace --stack all -- "$PP" 10
refused "refuse a bad value" 125 "actortrace record: --mode fast: not drop, block or overwrite" \
    "$AT" record --mode fast -- "$PP" 10
refused "refuse a number out of range" 125 \
    "actortrace record: --zstd-level 20: not a whole number from 1 to 19" \
    "$AT" record --zstd-level 20 -- "$PP" 10
refused "refuse an unknown event kind" 125 \
    "actortrace record: --stacks send,sent: not a comma-separated list of event kinds" \
    "$AT" record --stacks send,sent -- "$PP" 10
refused "refuse an empty event kind" 125 \
    "actortrace record: --stacks send,: not a comma-separated list of event kinds" \
    "$AT" record --stacks send, -- "$PP" 10
refused "refuse a stack depth out of range" 125 \
    "actortrace record: --stack-depth 33: not a whole number from 1 to 32" \
    "$AT" record --stack-depth 33 -- "$PP" 10
refused "refuse a stack sampling of 0" 125 \
    "actortrace record: --stack-every 0: not a whole number from 1 to 1073741824" \
    "$AT" record --stack-every 0 -- "$PP" 10
refused "refuse a value for --no-patch" 125 \
    "actortrace record: unknown option '--no-patch=1' (actortrace record --help lists the options)" \
    "$AT" record --no-patch=1 -- "$PP" 10
refused "refuse a missing program name" 125 "actortrace record: no program to run" \
    "$AT" record -o none.trace
refused "refuse a trace file that exists" 125 "actortrace: pp.trace exists" \
    "$AT" record -o pp.trace -- "$PP" 10
refused "refuse a trace file in a missing directory" 125 \
    "actortrace: cannot create /no/such/dir/x.trace: /no/such/dir: No such file or directory" \
    "$AT" record -o /no/such/dir/x.trace -- "$PP" 10
equal "refuse a trace file in a missing directory: one line" \
    "$(wc -l <"refuse a trace file in a missing directory.err")" 1
refused "refuse a trace file under a file" 125 \
    "actortrace: cannot create pp.trace/x.trace: pp.trace: Not a directory" \
    "$AT" record -o pp.trace/x.trace -- "$PP" 10
refused "refuse a missing library" 125 "actortrace: /no/lib.so: No such file or directory" \
    "$AT" record --preload /no/lib.so -- "$PP" 10
check "refusals wrote no trace" [ ! -e none.trace ]
if [ "$(id -u)" -eq 0 ]; then
    # the loader ignores LD_PRELOAD when a program changes its user or group. Copies of
    # pingpong in bin/ find librefrt.so in $ORIGIN/.., as the original does.
    mkdir bin && cp "$B/librefrt.so" .
    cp "$PP" bin/suid && chown nobody bin/suid && chmod 4755 bin/suid
    refused "refuse a program setuid to another user" 126 "actortrace: bin/suid is setuid" \
        "$AT" record -o none.trace -- bin/suid 10
    cp "$PP" bin/sgid && chgrp nogroup bin/sgid && chmod 2755 bin/sgid
    refused "refuse a program setgid to another group" 126 "actortrace: bin/sgid is setgid" \
        "$AT" record -o none.trace -- bin/sgid 10
    cp "$PP" bin/suid_self && chmod 4755 bin/suid_self
    status "record a program setuid to its own user" 0 "$AT" record -o self.trace -- bin/suid_self 10
    check "record a program setuid to its own user: traced" [ -s self.trace ]
else
    echo "ok - setuid refusals need root to make a file of another user # skip"
fi

# --- report, view, decode: tracedecode's views of the same trace
status "report" 0 "$AT" report pp.trace
"$DECODE" -f stats pp.trace >stats.txt
check "report: tracedecode's stats" cmp -s report.out stats.txt
status "report --json" 0 "$AT" report --json pp.trace
"$DECODE" -f stats --json pp.trace >stats.json
check "report --json: tracedecode's stats --json" cmp -s "report --json.out" stats.json
status "view" 0 "$AT" view pp.trace
"$DECODE" -f perfetto -o direct.pftrace pp.trace
check "view: pp.pftrace beside the trace is tracedecode's perfetto" cmp -s pp.pftrace direct.pftrace
says "view: says where and how to open it" view.out \
    "actortrace: wrote pp.pftrace; open it at https://ui.perfetto.dev"
status "view -o" 0 "$AT" view -o other.pftrace pp.trace
check "view -o: writes OUT" cmp -s other.pftrace direct.pftrace
status "decode" 0 "$AT" decode pp.trace
check "decode: tracedecode's JSONL" cmp -s decode.out pp.jsonl
status "decode with options" 0 "$AT" decode --event send -f jsonl pp.trace
equal "decode with options: they reach tracedecode" "$(kind_count "decode with options.out" send)" \
    "$(kind_count pp.jsonl send)"
head -c $(($(stat -c %s pp.trace) / 2)) pp.trace >cut.trace
status "decode, a cut trace: tracedecode's status" 1 "$AT" decode --no-recover cut.trace
status "report, a file that is not a trace" 2 "$AT" report static.c

# --- list: the runtimes, the library's shims, the program's libraries
row() { # row FILE RUNTIME: "SHIM LINKED" of a runtime in list's table
    awk -v r="$2" '$1 == r { print $3, $4 }' "$1"
}
status "list" 0 "$AT" list
says "list: names the library" list.out "library: $TRACER_LIB"
for r in refrt czmq caf aether beam glibc; do
    check "list: $r is listed" grep -q "^$r " list.out
done
status "list pingpong" 0 "$AT" list "$PP"
equal "list pingpong: links refrt" "$(row "list pingpong.out" refrt)" "yes yes"
equal "list pingpong: not czmq" "$(row "list pingpong.out" czmq)" "yes no"
status "list czmq pingpong" 0 "$AT" list "$B/tests/czmq/pingpong"
equal "list czmq pingpong: links czmq" "$(row "list czmq pingpong.out" czmq)" "yes yes"
equal "list czmq pingpong: not refrt" "$(row "list czmq pingpong.out" refrt)" "yes no"
status "list caf pingpong" 0 "$AT" list "$B/tests/caf/pingpong"
equal "list caf pingpong: links caf" "$(row "list caf pingpong.out" caf)" "yes yes"
status "list aether pingpong" 0 "$AT" list "$B/tests/aether/pingpong"
equal "list aether pingpong: links aether" "$(row "list aether pingpong.out" aether)" "yes yes"
# the runtime linked into the program, as ae build links it: traced by patching
status "list aether linked in" 0 "$AT" list "$B/static/aether/pingpong"
equal "list aether linked in: linked in, not as a library" \
    "$(row "list aether linked in.out" aether)" "yes in"
says "list aether linked in: will be patched" "list aether linked in.out" \
    "$B/static/aether/pingpong has aether linked in: record traces it by patching its functions' entries"
equal "list aether linked in: no other runtime linked in" \
    "$(awk '$4 == "in"' "list aether linked in.out" | wc -l)" 1
BEAM=/usr/lib/erlang/erts-13.1.5/bin/beam.smp
if [ -e "$BEAM" ]; then
    status "list beam.smp" 0 "$AT" list "$BEAM"
    equal "list beam.smp: is the beam" "$(row "list beam.smp.out" beam)" "yes yes"
    equal "list pingpong: not the beam" "$(row "list pingpong.out" beam)" "yes no"
else
    echo "not ok - list beam.smp: $BEAM is not installed (scripts/install-deps.sh installs it)"
fi
status "list, a program in PATH" 0 "$AT" list sh
status "list, a missing program" 2 "$AT" list no-such-program
says "list, a missing program: said" "list, a missing program.err" \
    "actortrace: no-such-program: program not found"
status "list, not an ELF file" 2 "$AT" list ./static.c
says "list, not an ELF file: said" "list, not an ELF file.err" "./static.c: not an ELF file"

# --- help and usage
for cmd in record report view decode list; do
    status "$cmd --help" 0 "$AT" "$cmd" --help
    says "$cmd --help: usage" "$cmd --help.out" "Usage: actortrace $cmd"
    status "help $cmd" 0 "$AT" help "$cmd"
    check "help $cmd = $cmd --help" cmp -s "help $cmd.out" "$cmd --help.out"
done
says "decode --help: tracedecode's options follow" "decode --help.out" "Usage: tracedecode"
status "--version" 0 "$AT" --version
says "--version: the version of actortrace.h" --version.out \
    "actortrace $(sed -n 's/^#define ACTORTRACE_VERSION_STRING "\(.*\)"/\1/p' "$TOP/include/actortrace.h")"
status "--help" 0 "$AT" --help
says "--help: every command" --help.out "record [OPTION...] [--] PROG [ARG...]"
status "no command" 2 "$AT"
status "unknown command" 2 "$AT" frobnicate
says "unknown command: said" "unknown command.err" "actortrace: unknown command 'frobnicate'"

# --- the man pages: Debian's tools render them, the linters say nothing, they match --help
for page in "$TOP"/man/*.[17]; do
    p=$(basename "$page")
    equal "man $p: groff -ww -z -man prints nothing" "$(groff -ww -z -man "$page" 2>&1)" ""
    equal "man $p: mandoc -T lint prints nothing" "$(mandoc -T lint "$page" 2>&1)" ""
    MANWIDTH=200 man -l "$page" 2>man.err | col -b >"$p.txt"
    check "man $p: man -l renders it" grep -q '^NAME' "$p.txt"
    check "man $p: man -l quiet" [ ! -s man.err ]
done
long_options() { # long_options FILE: the --options FILE names, one a line
    grep -o -- '--[a-z][a-z-]*' "$1" | sort -u
}
"$AT" --help >help.txt
for cmd in record report view list; do "$AT" "$cmd" --help; done >>help.txt
equal "man actortrace.1: has every option of actortrace's --help" \
    "$(long_options help.txt | comm -23 - "$(long_options actortrace.1.txt >opts.txt; echo opts.txt)")" ""
"$DECODE" --help >decode-help.txt
equal "man tracedecode.1: the options of tracedecode --help, no other" \
    "$(long_options tracedecode.1.txt)" "$(long_options decode-help.txt)"

# --- make install into a temporary DESTDIR, the installed command, make uninstall
DEST="$TMP/dest"
I="$DEST/usr/local"
make -s -C "$TOP" install PREFIX=/usr/local DESTDIR="$DEST" >install.out 2>&1
equal "make install: exit status 0" "$?" 0
for f in bin/actortrace bin/tracedecode lib/actortrace/libactortrace.so \
    include/actortrace/actortrace.h lib/pkgconfig/actortrace.pc share/man/man1/actortrace.1 \
    share/man/man1/tracedecode.1 share/man/man7/actortrace.7 share/doc/actortrace/README.md \
    share/doc/actortrace/docs/FORMAT.md; do
    check "make install: $f" [ -f "$I/$f" ]
done
env -u ACTORTRACE_LIB "$I/bin/actortrace" list >ilist.out 2>&1
says "installed: finds its library under PREFIX/lib/actortrace" ilist.out \
    "library: $I/lib/actortrace/libactortrace.so"
MANPATH="$I/share/man" man actortrace 2>/dev/null | col -b >iman.txt
check "installed: man actortrace finds the page" grep -q 'actortrace record' iman.txt
# with its own library: CZMQ's pingpong, which the product traces
( unset ACTORTRACE_LIB; status "installed, own library, czmq pingpong" 0 \
    "$I/bin/actortrace" record -o czmq.trace -- "$B/tests/czmq/pingpong" zstr 200 )
"$I/bin/tracedecode" -o czmq.jsonl czmq.trace
out="installed, own library, czmq pingpong.out"
equal "installed, own library, czmq pingpong: every send (ping, pong, term, signal)" \
    "$(kind_count czmq.jsonl send)" \
    $(($(truth "$out" ping) + $(truth "$out" pong) + $(truth "$out" term) + $(truth "$out" signal)))
equal "installed, own library, czmq pingpong: stderr" \
    "$(grep '^actortrace: trace' "installed, own library, czmq pingpong.err")" \
    "$(trace_line czmq.jsonl czmq.trace)"
status "installed, pingpong" 0 "$I/bin/actortrace" record -o ipp.trace -- "$PP" 1000
"$I/bin/tracedecode" -o ipp.jsonl ipp.trace
equal "installed, pingpong: every send" "$(kind_count ipp.jsonl send)" \
    "$(truth "installed, pingpong.out" send)"
equal "installed, pingpong: stderr" "$(grep '^actortrace: trace' "installed, pingpong.err")" \
    "$(trace_line ipp.jsonl ipp.trace)"
status "installed, report" 0 "$I/bin/actortrace" report ipp.trace
# a shim built on its own against the installed headers, with pkg-config's flags, preloaded
# before the installed library
flags=$(PKG_CONFIG_SYSROOT_DIR="$DEST" PKG_CONFIG_PATH="$I/lib/pkgconfig" pkg-config --cflags \
    --libs actortrace)
cc -shared -fPIC -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o libnopshim.so \
    "$TOP/tests/targets/nop/nop_shim.c" $flags -Wl,-z,defs
equal "installed headers: a shim builds with pkg-config's flags" "$?" 0
LD_PRELOAD="$TMP/libnopshim.so" timeout 60 env -u ACTORTRACE_LIB \
    "$I/bin/actortrace" record -o shim.trace -- "$B/tests/progs/forker" fork 1000 \
    >shim.out 2>shim.err
equal "installed, own shim: exit status 0" "$?" 0
"$I/bin/tracedecode" -o shim.jsonl shim.trace shim.trace.*
equal "installed, own shim: every send, in both processes" "$(kind_count shim.jsonl send)" 3000
make -s -C "$TOP" uninstall PREFIX=/usr/local DESTDIR="$DEST" >uninstall.out 2>&1
equal "make uninstall: exit status 0" "$?" 0
equal "make uninstall: no file left" "$(find "$DEST" -type f)" ""

# --- two copies of the tracer in LD_PRELOAD (an installed one exported, a build's added by
# record): each binds its own functions (-Bsymbolic), the program runs, and the trace is whole
# (before: each called the other's exported functions, dlopen recursed, and every program died
# of SIGSEGV, /bin/true too)
mkdir -p copy
cp "$TRACER_LIB" copy/
status "two copies, true" 0 env LD_PRELOAD="$TMP/copy/${TRACER_LIB##*/}:$TRACER_LIB" /bin/true
status "two copies, record" 0 env LD_PRELOAD="$TMP/copy/${TRACER_LIB##*/}" \
    "$AT" record -o two.trace -- "$PP" 1000
"$DECODE" -o two.jsonl two.trace
check "two copies, record: the trace decodes clean" [ $? -eq 0 ]
equal "two copies, record: the trace has every send" "$(kind_count two.jsonl send)" \
    "$(truth "two copies, record.out" send)"

# --- a trace named "-" (-o -): the summary is the trace's, not standard input's
status "record -o -" 0 sh -c "'$AT' record -o - -- '$PP' 100 <pp.trace"
"$DECODE" -o dash.jsonl ./-
equal "record -o -: the summary is the trace's" \
    "$(grep '^actortrace: trace' "record -o -.err")" "$(trace_line dash.jsonl -)"
rm -f ./-

# --- signals once the program has ended: the summary (a trace of 10 M events takes it about half
# a second) ends as any command does on SIGTERM, and keeps a signal the command was started
# ignoring (nohup) ignored
summary_signal() { # summary_signal NAME SIGNAL [IGNORED]: record's exit status in NAME.status
    rm -f "$1.trace"
    (
        [ -n "${3:-}" ] && trap '' "$3"
        exec "$AT" record -o "$1.trace" -- "$PP" 1000000 >/dev/null 2>"$1.err"
    ) &
    local rec=$! i=0
    # the program's end, then the summary's tracedecode
    while pgrep -P "$rec" -x pingpong >/dev/null && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
    while ! pgrep -P "$rec" -x tracedecode >/dev/null && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
    kill -s "$2" "$rec"
    wait "$rec"
    echo $? >"$1.status"
}
summary_signal term TERM
equal "record: SIGTERM during the summary ends it" "$(cat term.status)" 143
summary_signal nohup HUP HUP
# and during the run: the program inherits it ignored, as it would untraced
rm -f nohup_run.trace
(trap '' HUP && exec "$AT" record -o nohup_run.trace -- "$PP" 1000000 >nohup_run.out 2>/dev/null) &
rec=$!
i=0
while ! pgrep -P "$rec" -x pingpong >/dev/null && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
kill -s HUP "$rec"
wait "$rec"
equal "record: SIGHUP during the run, started with it ignored (nohup): the program runs on" \
    "$?:$(truth nohup_run.out send)" "0:$((2 * 1000000 + 1))"
equal "record: SIGHUP during the summary, started with it ignored (nohup): ends as usual" \
    "$(cat nohup.status)" 0
says "record: SIGHUP ignored: the summary is written" nohup.err "actortrace: trace: nohup.trace"
rm -f term.trace* nohup.trace* nohup_run.trace*

# --- --follow and --top: refused where they would destroy a trace or spin
cp pp.trace follow.trace
status "follow into the trace it reads" 2 "$DECODE" --follow -o follow.trace follow.trace
check "follow into the trace it reads: the trace is untouched" cmp -s pp.trace follow.trace
says "follow into the trace it reads: says why" "follow into the trace it reads.err" \
    "follow.trace: is one of the trace files; not overwriting it"
status "top without a terminal" 2 timeout -s KILL 10 "$DECODE" --top pp.trace </dev/null
says "top without a terminal: says why" "top without a terminal.err" \
    "--top reads its keys from a terminal"
