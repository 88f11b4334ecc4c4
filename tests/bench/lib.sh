# What the benchmark scripts share (sourced): the working directory, the build, RUNS, a
# temporary directory removed at exit, and the median of numbers on standard input.
set -u
cd "$(dirname "$0")/../.."
B=build
RUNS=${RUNS:-5}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/actortrace-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
