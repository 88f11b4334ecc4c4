#!/bin/sh
# The product exports exactly actortrace.h's API (and what its inline functions use) and the
# functions the shims define under a runtime's name, each marked AT_EXPORT in the source: nothing
# internal but the five names the inline hot path reaches (two of them mutable: the thread's own
# record state at__self, written by the thread that owns it, and the stack kinds mask
# at__stack_kinds, written once by a constructor), and no shim of the test-only reference runtime (a
# program with its own rt_send must not meet ours).
. "$(dirname "$0")/../lib.sh"
cd "$TOP"

# The names the source marks AT_EXPORT: a versioned wrapper under its symver name, a variable
# or function under its own.
marked() {
    grep -h '^AT_EXPORT' "$@" | sed -E \
        -e 's/.*symver\("([A-Za-z_0-9]+)@@.*/\1/' \
        -e 's/^AT_EXPORT extern .*[ *]([A-Za-z_][A-Za-z_0-9]*) __attribute__.*/\1/' \
        -e 's/^AT_EXPORT extern [^(]*[ *]([A-Za-z_][A-Za-z_0-9]*);$/\1/' \
        -e 's/^AT_EXPORT [^(]*[ *]([A-Za-z_][A-Za-z_0-9]*)\(.*/\1/' | sort -u
}
exported() { # the defined dynamic symbols, without version nodes or versions
    nm -D --defined-only "$1" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort -u
}

# A wrapper defined under a macro (a C++ runtime's mangled name: #define SYM_X _ZN...) counts
# under the macro's value.
unmacro() { # unmacro DEFINES: stdin's names, each macro among them replaced by its value
    awk 'NR == FNR { if ($1 == "#define" && NF == 3) value[$2] = $3; next }
         { print ($1 in value) ? value[$1] : $1 }' "$1" - | sort -u
}
src="include/*.h preload/*.c shim/*.c"
# continued lines joined; the benchmarks' floor variant (AT_BENCH_FLOOR) is never the product
# shellcheck disable=SC2086
cat $src | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' -e '/^#ifdef AT_BENCH_FLOOR/,/^#else/d' >"$TMP/src"
# shellcheck disable=SC2086
marked "$TMP/src" | unmacro "$TMP/src" >"$TMP/want"
exported "$PRODUCT_LIB" >"$TMP/got"
check "the source marks the API and the wrappers ($(wc -l <"$TMP/want") names)" \
    [ "$(wc -l <"$TMP/want")" -gt 40 ]
if diff "$TMP/want" "$TMP/got" >"$TMP/diff"; then
    echo "ok - the product exports exactly the names marked AT_EXPORT"
else
    echo "not ok - the product's exports differ from the names marked AT_EXPORT:"
    sed 's/^/#   /' "$TMP/diff"
fi
equal "internal names exported" "$(grep '^at__' "$TMP/got" | tr '\n' ' ')" \
    "at__core_slow at__record_slow at__self at__stack_capture at__stack_kinds "
equal "reference runtime's names in the product" "$(grep -c '^rt_' "$TMP/got")" 0
exported "$LIB" >"$TMP/test_copy"
check "the test copy wraps the reference runtime" grep -qx rt_send "$TMP/test_copy"
# objects dlopen loads are patched before it returns (preload/patch_dlopen.c)
check "the product wraps dlopen" grep -qx dlopen "$TMP/got"
check "the test copy patches what dlopen loads" grep -qx dlopen "$TMP/test_copy"
