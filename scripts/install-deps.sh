#!/bin/sh
# Installs the Debian packages actortrace builds and tests with, if any is missing.
# Idempotent: does nothing when all are present. Installing needs root (apt-get).
set -eu

# build: compiler, zstd, libunwind, Zydis (entry patching); tests: jq, clang and its runtime (libFuzzer), CZMQ, protoc,
# GNU time (peak memory), pgrep (procps); benchmarks: perf (linux-perf).
packages="build-essential libzstd-dev libunwind-dev jq clang libclang-rt-14-dev libczmq-dev protobuf-compiler libzydis-dev time procps linux-perf"
# tests of the actortrace command: man page linters, man and col, pkg-config for a shim
packages="$packages mandoc groff-base man-db bsdextrautils pkgconf"
# tests of the CAF shim: CAF itself, and valgrind for a traced run under memcheck
packages="$packages libcaf-dev valgrind"
# the check that every C file is in the project's layout (tests/e2e/format.sh, make format)
packages="$packages clang-format"
# the benchmarks' check that the floor variant runs the shims (a breakpoint in a wrapper)
packages="$packages gdb"
# tests of shimgen: its worked examples trace programs on Debian's GLib and libuv
packages="$packages libglib2.0-dev libuv1-dev"
# the top view (ncurses), and tmux, in which its test runs it
packages="$packages libncurses-dev tmux"
# tests of the BEAM shim: Erlang/OTP 25 (erts 13.1.5) and Elixir 1.14
packages="$packages erlang-base elixir"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "actortrace: installing missing packages:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
    echo "actortrace: not root; run as root: apt-get install -y$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
