#!/bin/sh
# preload/ in layers (preload/README.md): each file uses only the files of its own layer and
# of those below it. Each file is compiled alone and every at__ name it leaves undefined must
# be defined in a file at its layer or below, but for the one way up that the README names.
. "$(dirname "$0")/../lib.sh"
cd "$TOP"

layer_of() { # layer_of FILE: the rank of preload/FILE's layer, as the README's table says
    case "$1" in
    util.c | resolve.c | stackroom.c | jumps.c | patch_stubs.c | patch_x86.c) echo 0 ;;
    config.c | tracefile.c) echo 1 ;;
    ring.c) echo 2 ;;
    losses.c) echo 3 ;;
    meta.c | stacks.c | patch.c | patch_dlopen.c) echo 4 ;;
    takeback.c) echo 5 ;;
    writer.c) echo 6 ;;
    record.c) echo 7 ;;
    lifecycle.c | signals.c | process.c) echo 8 ;;
    *) echo unplaced ;;
    esac
}
# The way up: at_record's slow entry (lifecycle.c), which any code that records an event
# reaches through the installed hot path (stacks.c's companion event, record.c's retry).
way_up() { # way_up SYMBOL
    [ "$1" = at__record_slow ]
}

for c in preload/*.c; do
    f=$(basename "$c")
    rank=$(layer_of "$f")
    check "$f has a layer" [ "$rank" != unplaced ]
    cc -Iinclude -Itests/targets/rt -D_GNU_SOURCE -std=gnu11 -fPIC -ftls-model=initial-exec -c -o "$TMP/${f%.c}.o" "$c" ||
        echo "not ok - $f compiles alone"
    nm --defined-only "$TMP/${f%.c}.o" | awk -v r="$rank" '$3 ~ /^at_/ {print $3, r}' >>"$TMP/defined"
done
sort -u "$TMP/defined" >"$TMP/defined.sorted"
bad=0
for c in preload/*.c; do
    f=$(basename "$c")
    rank=$(layer_of "$f")
    for sym in $(nm --undefined-only "$TMP/${f%.c}.o" | awk '$2 ~ /^at_/ {print $2}'); do
        def=$(awk -v s="$sym" '$1 == s {print $2; exit}' "$TMP/defined.sorted")
        [ -z "$def" ] && continue # defined outside preload/: a shim's, or the C library's
        if [ "$def" -gt "$rank" ] && ! way_up "$sym"; then
            echo "not ok - $f (layer $rank) uses $sym (layer $def)"
            bad=$((bad + 1))
        fi
    done
done
equal "uses of a higher layer" "$bad" 0
