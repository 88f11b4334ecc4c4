# Sourced by the tests that read a Perfetto trace (after tests/lib.sh): protoc decodes it with
# the subset of Perfetto's protos in this folder, and pftsv turns protoc's text into lines.
PROTO="$TOP/tests/e2e/proto"

# pftsv PFTRACE: one line per packet: "E ts type track name_iid flow terminating_flow msg"
# (track events), "T uuid tid pid ts name" (track descriptors; name last, quoted as protoc
# prints it) and "N iid name" (interned names)
pftsv() {
    protoc --decode=perfetto.protos.Trace -I "$PROTO" "$PROTO/perfetto_min.proto" <"$1" | awk '
        function reset() { ts = type = track = iid = flow = term = msg = uuid = tid = pid = tname = "-"; ev = 0 }
        BEGIN { reset(); depth = 0 }
        /{$/ { depth++; block[depth] = $1; next }
        /^ *}$/ {
            if (depth == 1) {
                if (ev) print "E", ts, type, track, iid, flow, term, msg
                else if (uuid != "-") print "T", uuid, tid, pid, ts, tname
                reset()
            }
            depth--; next
        }
        { key = $1; sub(":$", "", key); val = $2 }
        depth == 1 && key == "timestamp" { ts = val }
        block[depth] == "track_event" && key == "type" { type = val; ev = 1 }
        block[depth] == "track_event" && key == "track_uuid" { track = val }
        block[depth] == "track_event" && key == "name_iid" { iid = val }
        block[depth] == "track_event" && key == "flow_ids" { flow = val }
        block[depth] == "track_event" && key == "terminating_flow_ids" { term = val }
        block[depth] == "debug_annotations" && key == "uint_value" { msg = val }
        block[depth] == "track_descriptor" && key == "uuid" { uuid = val }
        block[depth] == "track_descriptor" && key == "name" { $1 = ""; tname = substr($0, 2) }
        block[depth] == "thread" && key == "tid" { tid = val }
        block[depth] == "thread" && key == "pid" { pid = val }
        block[depth] == "process" && key == "pid" { pid = val }
        block[depth] == "event_names" && key == "iid" { niid = val }
        block[depth] == "event_names" && key == "name" { $1 = ""; print "N", niid, substr($0, 2) }
    '
}

# pfslices PFTRACE: the slices as trace_processor builds them (an end closes the topmost open
# slice of its track), one JSON object a line: {kind, track, name, b, e} with kind "actor",
# "thread", "core" or "process"; {kind: "unmatched end", ...} for an end with no open slice, and
# {kind: "open", ...} for a slice still open at the end of the trace.
pfslices() {
    pftsv "$1" | awk '
        function kind(u) {
            if (tid[u] != "-") return "thread"
            if (tname[u] ~ /^"core [0-9]+"$/) return "core"
            return pid[u] != "-" ? "process" : "actor"
        }
        function out(k, u, n, b, e) { printf "{\"kind\":\"%s\",\"track\":%s,\"name\":%s,\"b\":%s,\"e\":%s}\n", k, tname[u], n, b, e }
        $1 == "T" { tid[$2] = $3; pid[$2] = $4; t = $0; sub(/^T [^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", t); tname[$2] = t }
        $1 == "N" { n = $0; sub(/^N [^ ]+ /, "", n); nm[$2] = n }
        $1 == "E" && $3 == "TYPE_SLICE_BEGIN" { d = ++sp[$4]; sb[$4, d] = $2; si[$4, d] = $5 }
        $1 == "E" && $3 == "TYPE_SLICE_END" {
            if (sp[$4] > 0) { d = sp[$4]--; out(kind($4), $4, nm[si[$4, d]], sb[$4, d], $2) }
            else out("unmatched end", $4, "\"\"", $2, $2)
        }
        END { for (u in sp) for (d = 1; d <= sp[u]; d++) out("open", u, nm[si[u, d]], sb[u, d], "null") }
    '
}
