#!/bin/sh
# Every C file of the project is in the layout of .clang-format (Debian's clang-format 14, which
# scripts/install-deps.sh installs): `make format` rewrites them; this names any that differ.
. "$(dirname "$0")/../lib.sh"

cd "$TOP" || exit 1
find include common preload shim decoder cli tools tests -name '*.[ch]' | sort >"$TMP/files"
check "clang-format is installed" sh -c "command -v clang-format >/dev/null"
check "there are C files to check" [ -s "$TMP/files" ]
: >"$TMP/differ"
while read -r f; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f" >>"$TMP/differ"
done <"$TMP/files"
equal "every C file is in the .clang-format layout (make format; differing: $(tr '\n' ' ' <"$TMP/differ"))" \
    "$(wc -l <"$TMP/differ")" 0
