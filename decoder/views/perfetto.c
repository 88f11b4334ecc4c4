/* --format perfetto: the Perfetto trace format (a protobuf `Trace`: a sequence of TracePacket),
 * which ui.perfetto.dev and trace_processor open, built from the tracks and items of
 * timeline.c. Every event is a TrackEvent with an interned name; tracks are TrackDescriptor
 * packets, written before their first event.
 *
 * The encoding is written here by hand: it is a few varint, fixed64 and length-delimited
 * fields, and Debian's protobuf-c would need generated code for Perfetto's large schema to
 * write them. Field numbers are those of Perfetto's published protos; tests/e2e/proto/
 * perfetto_min.proto declares the subset used, and the tests decode our output with it.
 *
 * An event's call stack is an interned Callstack (see "Call stacks" below). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "at_codec.h"
#include "session.h"
#include "hmap.h"
#include "output.h"
#include "stacks.h"
#include "timeline.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

/* Trace, TracePacket, TrackEvent, DebugAnnotation, InternedData, TrackDescriptor,
 * ProcessDescriptor and ThreadDescriptor fields. */
enum { TRACE_PACKET = 1 };
enum {
    PACKET_TIMESTAMP = 8,
    PACKET_SEQUENCE_ID = 10,
    PACKET_TRACK_EVENT = 11,
    PACKET_INTERNED = 12,
    PACKET_SEQUENCE_FLAGS = 13,
    PACKET_TRACK_DESCRIPTOR = 60,
};
enum {
    EVENT_ANNOTATION = 4,
    EVENT_TYPE = 9,
    EVENT_NAME_IID = 10,
    EVENT_TRACK = 11,
    EVENT_FLOW = 47,
    EVENT_FLOW_END = 48,
    EVENT_CALLSTACK_IID = 56,
};
enum { ANNOTATION_NAME_IID = 1, ANNOTATION_UINT = 3 };
enum { INTERNED_EVENT_NAME = 2, INTERNED_ANNOTATION_NAME = 3, INTERNED_IID = 1, INTERNED_NAME = 2 };
enum { TRACK_UUID = 1, TRACK_NAME = 2, TRACK_PROCESS = 3, TRACK_THREAD = 4, TRACK_PARENT = 5 };
enum { PROCESS_PID = 1, PROCESS_NAME = 6 };
enum { THREAD_PID = 1, THREAD_TID = 2, THREAD_NAME = 5 };

enum { STATE_CLEARED = 1, NEEDS_STATE = 2 }; /* TracePacket.SequenceFlags */
#define SEQUENCE           1                 /* every packet is on one sequence */
#define MSG_ANNOTATION_IID 1                 /* the debug annotation "msg" */
#define EVENT_ROOM         160               /* a TrackEvent without strings */
#define FLOW_ROOM          10                /* a flow id: its tag and a fixed64 */

struct perfetto {
    struct tl_format f;
    struct hmap interned; /* (trace, what, kind), id -> event name iid; call stacks' parts */
    uint32_t next_iid;
    uint8_t *stack_data; /* the InternedData entries of the call stack of the item at hand */
    size_t stack_len, stack_cap;
    uint8_t *event; /* the TrackEvent at hand: EVENT_ROOM, and FLOW_ROOM per fan-out flow */
    size_t event_cap;
};

/* ---- Protobuf encoding --------------------------------------------------------------------- */

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

static uint8_t *varint(uint8_t *p, uint64_t v)
{
    return p + at_varint_put(p, v);
}

static uint8_t *tag(uint8_t *p, unsigned field, unsigned wire)
{
    return varint(p, (uint64_t)field << 3 | wire);
}

static uint8_t *uint_field(uint8_t *p, unsigned field, uint64_t v)
{
    return varint(tag(p, field, WIRE_VARINT), v);
}

static uint8_t *fixed64_field(uint8_t *p, unsigned field, uint64_t v)
{
    p = tag(p, field, WIRE_FIXED64);
    memcpy(p, &v, 8); /* little-endian, as protobuf wants */
    return p + 8;
}

/* The key and length of a length-delimited field; its len bytes follow. */
static uint8_t *len_field(uint8_t *p, unsigned field, size_t len)
{
    return varint(tag(p, field, WIRE_LEN), len);
}

static uint8_t *bytes_field(uint8_t *p, unsigned field, const void *s, size_t len)
{
    p = len_field(p, field, len);
    memcpy(p, s, len);
    return p + len;
}

static size_t uint_size(unsigned field, uint64_t v)
{
    return varint_size((uint64_t)field << 3) + varint_size(v);
}

static size_t len_size(unsigned field, size_t len)
{
    return varint_size((uint64_t)field << 3) + varint_size(len) + len;
}

/* Room for a whole packet of `body` bytes in the output. */
static uint8_t *packet_start(struct out *o, size_t body)
{
    uint8_t *p = (uint8_t *)at__out_reserve(o, len_size(TRACE_PACKET, body));
    return p ? len_field(p, TRACE_PACKET, body) : NULL;
}

/* ---- Packets ------------------------------------------------------------------------------- */

/* The first packet: it starts the sequence's interning state and names the annotation. */
static int put_header(struct out *o)
{
    static const char msg[] = "msg";
    size_t entry = uint_size(INTERNED_IID, MSG_ANNOTATION_IID) + len_size(INTERNED_NAME, 3);
    size_t interned = len_size(INTERNED_ANNOTATION_NAME, entry);
    size_t body = uint_size(PACKET_SEQUENCE_ID, SEQUENCE) +
                  uint_size(PACKET_SEQUENCE_FLAGS, STATE_CLEARED) +
                  len_size(PACKET_INTERNED, interned);
    uint8_t *p = packet_start(o, body);
    if (!p)
        return -ENOMEM;
    p = uint_field(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = uint_field(p, PACKET_SEQUENCE_FLAGS, STATE_CLEARED);
    p = len_field(len_field(p, PACKET_INTERNED, interned), INTERNED_ANNOTATION_NAME, entry);
    p = uint_field(p, INTERNED_IID, MSG_ANNOTATION_IID);
    at__out_commit(o, (char *)bytes_field(p, INTERNED_NAME, msg, 3));
    return 0;
}

/* The ProcessDescriptor or ThreadDescriptor of a process or thread track (TRACK_PROCESS and
 * TRACK_THREAD have keys of one byte alike, so either sizes the field). */
static size_t descriptor_size(const struct tl_track *t, size_t name_len)
{
    uint64_t pid = t->trace->process.pid;
    if (t->kind == TL_PROCESS)
        return uint_size(PROCESS_PID, pid) + len_size(PROCESS_NAME, name_len);
    return uint_size(THREAD_PID, pid) + uint_size(THREAD_TID, t->id) +
           len_size(THREAD_NAME, name_len);
}

static uint8_t *descriptor(uint8_t *p, const struct tl_track *t, const char *name, size_t len)
{
    uint64_t pid = t->trace->process.pid;
    size_t size = descriptor_size(t, len);
    if (t->kind == TL_PROCESS) {
        p = uint_field(len_field(p, TRACK_PROCESS, size), PROCESS_PID, pid);
        return bytes_field(p, PROCESS_NAME, name, len);
    }
    p = uint_field(len_field(p, TRACK_THREAD, size), THREAD_PID, pid);
    p = uint_field(p, THREAD_TID, t->id);
    return bytes_field(p, THREAD_NAME, name, len);
}

static int put_track(void *arg, const struct tl_track *t)
{
    struct perfetto *pf = arg;
    size_t len;
    const char *name = at__tl_track_name(&pf->f.tl, t, &len);
    if (!name)
        return -ENOMEM;
    bool described = t->kind == TL_PROCESS || t->kind == TL_THREAD;
    size_t track = uint_size(TRACK_UUID, t->uuid) + len_size(TRACK_NAME, len) +
                   (t->parent ? uint_size(TRACK_PARENT, t->parent) : 0) +
                   (described ? len_size(TRACK_THREAD, descriptor_size(t, len)) : 0);
    size_t body = uint_size(PACKET_TIMESTAMP, t->ts_ns) + uint_size(PACKET_SEQUENCE_ID, SEQUENCE) +
                  len_size(PACKET_TRACK_DESCRIPTOR, track);
    uint8_t *p = packet_start(pf->f.o, body);
    if (!p)
        return -ENOMEM;
    p = uint_field(p, PACKET_TIMESTAMP, t->ts_ns);
    p = uint_field(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = uint_field(len_field(p, PACKET_TRACK_DESCRIPTOR, track), TRACK_UUID, t->uuid);
    p = bytes_field(p, TRACK_NAME, name, len);
    if (t->parent)
        p = uint_field(p, TRACK_PARENT, t->parent);
    if (described)
        p = descriptor(p, t, name, len);
    at__out_commit(pf->f.o, (char *)p);
    return 0;
}

/* The iid of an interned key; *fresh when this is its first use. Returns 0 or -ENOMEM. */
static int lookup(struct perfetto *pf, struct hkey key, uint64_t *iid, bool *fresh)
{
    uint32_t *found = at__hmap_get(&pf->interned, key);
    *fresh = !found;
    if (found) {
        *iid = *found;
        return 0;
    }
    *iid = ++pf->next_iid;
    return at__hmap_put(&pf->interned, key, (uint32_t)*iid);
}

static uint64_t trace_index(const struct perfetto *pf, const struct tl_item *it)
{
    return (uint64_t)(it->track->trace - pf->f.tl.d->traces);
}

/* The iid of the item's name; *fresh when this is its first use. Returns 0 or -ENOMEM. */
static int intern(struct perfetto *pf, const struct tl_item *it, uint64_t *iid, bool *fresh)
{
    uint8_t kind = it->what == TL_NAME_EVENT ? it->kind : 0;
    struct hkey key = {trace_index(pf, it) << 16 | (uint64_t)it->what << 8 | kind, it->id};
    return lookup(pf, key, iid, fresh);
}

/* ---- Call stacks ----------------------------------------------------------------------------
 * An event's stack is a Callstack in InternedData, written in the packet that first uses it
 * with the parts it needs that are new: its Frames (outermost first, as Callstack wants), their
 * functions' names, and their modules as Mappings (build-id and path, the path split at '/',
 * as InternedStrings). The TrackEvent names it by callstack_iid. A frame is known by its module
 * and address, a function by its module and start address, so that stacks share them. */

enum {
    INTERNED_FUNCTION_NAMES = 5,
    INTERNED_FRAMES = 6,
    INTERNED_CALLSTACKS = 7,
    INTERNED_BUILD_IDS = 16,
    INTERNED_MAPPING_PATHS = 17,
    INTERNED_MAPPINGS = 19,
};
enum { STRING_IID = 1, STRING_STR = 2 }; /* InternedString */
enum { MAPPING_IID = 1, MAPPING_BUILD_ID = 2, MAPPING_PATH_IDS = 7 };
enum { FRAME_IID = 1, FRAME_FUNCTION = 2, FRAME_MAPPING = 3, FRAME_REL_PC = 4 };
enum { CALLSTACK_IID = 1, CALLSTACK_FRAMES = 2 };
enum { KEY_STACK = 0x80, KEY_MAPPING, KEY_FUNCTION, KEY_FRAME }; /* beyond enum tl_what */

/* Room for n more bytes of stack entries, or NULL on -ENOMEM. */
static uint8_t *stack_room(struct perfetto *pf, size_t n)
{
    if (pf->stack_cap - pf->stack_len < n) {
        size_t cap = 2 * pf->stack_cap + n;
        uint8_t *grown = realloc(pf->stack_data, cap);
        if (!grown)
            return NULL;
        pf->stack_data = grown;
        pf->stack_cap = cap;
    }
    return pf->stack_data + pf->stack_len;
}

static void stack_commit(struct perfetto *pf, const uint8_t *end)
{
    pf->stack_len = (size_t)(end - pf->stack_data);
}

/* An InternedString entry of InternedData's `field`. Returns 0 or -ENOMEM. */
static int put_string(struct perfetto *pf, unsigned field, uint64_t iid, const void *s, size_t len)
{
    size_t entry = uint_size(STRING_IID, iid) + len_size(STRING_STR, len);
    uint8_t *p = stack_room(pf, len_size(field, entry));
    if (!p)
        return -ENOMEM;
    p = uint_field(len_field(p, field, entry), STRING_IID, iid);
    stack_commit(pf, bytes_field(p, STRING_STR, s, len));
    return 0;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A module's build-id as Perfetto wants it, raw bytes; 0 (no iid) when the module has none. */
static int put_build_id(struct perfetto *pf, const char *hex, uint64_t *iid)
{
    uint8_t raw[64];
    size_t n = 0;
    *iid = 0;
    for (; hex[2 * n] && hex[2 * n + 1] && n < sizeof raw; n++) {
        int hi = hex_digit(hex[2 * n]), lo = hex_digit(hex[2 * n + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        raw[n] = (uint8_t)(hi << 4 | lo);
    }
    if (n == 0)
        return 0;
    *iid = ++pf->next_iid;
    return put_string(pf, INTERNED_BUILD_IDS, *iid, raw, n);
}

/* The path's components as InternedStrings with consecutive iids from *first; their number. */
static int put_path(struct perfetto *pf, const char *path, uint64_t *first, size_t *n)
{
    *first = pf->next_iid + 1;
    *n = 0;
    for (const char *p = path; *p; p += *p == '/') {
        size_t len = strcspn(p, "/");
        if (len && put_string(pf, INTERNED_MAPPING_PATHS, ++pf->next_iid, p, len) < 0)
            return -ENOMEM;
        *n += len != 0;
        p += len;
    }
    return 0;
}

/* The Mapping of module id of trace, written when new; *iid 0 when there is no such module. */
static int put_mapping(struct perfetto *pf, uint64_t trace, const struct trace *t, uint32_t id,
                       uint64_t *iid)
{
    const struct stack_module *m = at__stacks_module(t, id);
    bool fresh;
    uint64_t build_id, path;
    size_t parts;
    *iid = 0;
    if (!m || lookup(pf, (struct hkey){trace << 16 | KEY_MAPPING << 8, id}, iid, &fresh) < 0)
        return m ? -ENOMEM : 0;
    if (!fresh)
        return 0;
    if (put_build_id(pf, m->build_id, &build_id) < 0 || put_path(pf, m->path, &path, &parts) < 0)
        return -ENOMEM;
    size_t entry =
        uint_size(MAPPING_IID, *iid) + (build_id ? uint_size(MAPPING_BUILD_ID, build_id) : 0);
    for (size_t i = 0; i < parts; i++)
        entry += uint_size(MAPPING_PATH_IDS, path + i);
    uint8_t *p = stack_room(pf, len_size(INTERNED_MAPPINGS, entry));
    if (!p)
        return -ENOMEM;
    p = uint_field(len_field(p, INTERNED_MAPPINGS, entry), MAPPING_IID, *iid);
    if (build_id)
        p = uint_field(p, MAPPING_BUILD_ID, build_id);
    for (size_t i = 0; i < parts; i++)
        p = uint_field(p, MAPPING_PATH_IDS, path + i);
    stack_commit(pf, p);
    return 0;
}

/* The name of a frame's function, written when new; *iid 0 when it has none. */
static int put_function(struct perfetto *pf, uint64_t trace, const struct stack_frame *f,
                        uint64_t *iid)
{
    bool fresh;
    *iid = 0;
    if (!f->func_len)
        return 0;
    struct hkey key = {trace << 16 | KEY_FUNCTION << 8,
                       (uint64_t)f->module << 48 ^ (f->addr - f->offset)};
    if (lookup(pf, key, iid, &fresh) < 0)
        return -ENOMEM;
    return fresh ? put_string(pf, INTERNED_FUNCTION_NAMES, *iid, f->func, f->func_len) : 0;
}

/* A Frame, with its function and mapping, written when new. */
static int put_frame(struct perfetto *pf, uint64_t trace, const struct trace *t,
                     const struct stack_frame *f, uint64_t *iid)
{
    bool fresh;
    uint64_t function, mapping;
    struct hkey key = {trace << 16 | KEY_FRAME << 8, (uint64_t)f->module << 48 ^ f->addr};
    if (lookup(pf, key, iid, &fresh) < 0)
        return -ENOMEM;
    if (!fresh)
        return 0;
    if (put_function(pf, trace, f, &function) < 0 ||
        put_mapping(pf, trace, t, f->module, &mapping) < 0)
        return -ENOMEM;
    size_t entry = uint_size(FRAME_IID, *iid) + uint_size(FRAME_REL_PC, f->addr) +
                   (function ? uint_size(FRAME_FUNCTION, function) : 0) +
                   (mapping ? uint_size(FRAME_MAPPING, mapping) : 0);
    uint8_t *p = stack_room(pf, len_size(INTERNED_FRAMES, entry));
    if (!p)
        return -ENOMEM;
    p = uint_field(len_field(p, INTERNED_FRAMES, entry), FRAME_IID, *iid);
    if (function)
        p = uint_field(p, FRAME_FUNCTION, function);
    if (mapping)
        p = uint_field(p, FRAME_MAPPING, mapping);
    stack_commit(pf, uint_field(p, FRAME_REL_PC, f->addr));
    return 0;
}

/* The Callstack of frames[0..n) (innermost first), after its frames. */
static int put_callstack(struct perfetto *pf, uint64_t trace, const struct trace *t,
                         const struct stack_frame *frames, uint32_t n, uint64_t iid)
{
    uint64_t ids[AT_STACK_FRAMES_MAX];
    size_t entry = uint_size(CALLSTACK_IID, iid);
    for (uint32_t i = 0; i < n; i++) {
        if (put_frame(pf, trace, t, &frames[n - 1 - i], &ids[i]) < 0)
            return -ENOMEM;
        entry += uint_size(CALLSTACK_FRAMES, ids[i]);
    }
    uint8_t *p = stack_room(pf, len_size(INTERNED_CALLSTACKS, entry));
    if (!p)
        return -ENOMEM;
    p = uint_field(len_field(p, INTERNED_CALLSTACKS, entry), CALLSTACK_IID, iid);
    for (uint32_t i = 0; i < n; i++)
        p = uint_field(p, CALLSTACK_FRAMES, ids[i]);
    stack_commit(pf, p);
    return 0;
}

/* The callstack iid of the item's stack, its entries in stack_data when it is new; 0 when
 * the item has none or the trace lacks its STACK record. Returns 0 or -ENOMEM. */
static int intern_stack(struct perfetto *pf, const struct tl_item *it, uint64_t *iid)
{
    const struct trace *t = it->track->trace;
    uint64_t trace = trace_index(pf, it);
    uint32_t n;
    bool fresh;
    const struct stack_frame *frames = at__stacks_frames(t, it->stack, &n);
    pf->stack_len = 0;
    *iid = 0;
    if (!frames || it->type == TL_END)
        return 0;
    if (lookup(pf, (struct hkey){trace << 16 | KEY_STACK << 8, it->stack}, iid, &fresh) < 0)
        return -ENOMEM;
    return fresh ? put_callstack(pf, trace, t, frames, n, *iid) : 0;
}

/* The TrackEvent of an item, without its name, into p (EVENT_ROOM bytes, and FLOW_ROOM for
 * each flow past the first). */
static uint8_t *track_event(uint8_t *p, const struct tl_item *it, uint64_t iid)
{
    p = uint_field(p, EVENT_TYPE, it->type);
    p = uint_field(p, EVENT_TRACK, it->track->uuid);
    if (iid)
        p = uint_field(p, EVENT_NAME_IID, iid);
    for (uint32_t i = 0; it->flow_out && i < (it->flows_out > 1 ? it->flows_out : 1); i++)
        p = fixed64_field(p, EVENT_FLOW, it->flow_out + i); /* one per delivery */
    if (it->flow_via)
        p = fixed64_field(p, EVENT_FLOW, it->flow_via);
    if (it->flow_in)
        p = fixed64_field(p, EVENT_FLOW_END, it->flow_in);
    if (it->msg && it->type != TL_END) {
        size_t size = uint_size(ANNOTATION_NAME_IID, MSG_ANNOTATION_IID) +
                      uint_size(ANNOTATION_UINT, it->msg);
        p = uint_field(len_field(p, EVENT_ANNOTATION, size), ANNOTATION_NAME_IID,
                       MSG_ANNOTATION_IID);
        p = uint_field(p, ANNOTATION_UINT, it->msg);
    }
    return p;
}

static int put_item(void *arg, const struct tl_item *it)
{
    struct perfetto *pf = arg;
    uint64_t iid = 0;
    bool fresh = false;
    const char *name = NULL;
    size_t name_len = 0, entry = 0;
    if (it->type != TL_END && intern(pf, it, &iid, &fresh) < 0)
        return -ENOMEM;
    if (fresh && !(name = at__tl_item_name(&pf->f.tl, it, &name_len)))
        return -ENOMEM;
    uint64_t stack_iid;
    if (intern_stack(pf, it, &stack_iid) < 0)
        return -ENOMEM;
    size_t room = EVENT_ROOM + (it->flows_out > 1 ? it->flows_out : 0) * FLOW_ROOM;
    if (at__array_reserve((void **)&pf->event, &pf->event_cap, room, 1) < 0)
        return -ENOMEM;
    uint8_t *event = pf->event;
    uint8_t *event_end = track_event(event, it, iid);
    if (stack_iid)
        event_end = uint_field(event_end, EVENT_CALLSTACK_IID, stack_iid);
    size_t event_len = (size_t)(event_end - event);
    if (fresh)
        entry = uint_size(INTERNED_IID, iid) + len_size(INTERNED_NAME, name_len);
    size_t interned = (fresh ? len_size(INTERNED_EVENT_NAME, entry) : 0) + pf->stack_len;
    size_t body = uint_size(PACKET_TIMESTAMP, it->ts_ns) + uint_size(PACKET_SEQUENCE_ID, SEQUENCE) +
                  uint_size(PACKET_SEQUENCE_FLAGS, NEEDS_STATE) +
                  len_size(PACKET_TRACK_EVENT, event_len) +
                  (interned ? len_size(PACKET_INTERNED, interned) : 0);
    uint8_t *p = packet_start(pf->f.o, body);
    if (!p)
        return -ENOMEM;
    p = uint_field(p, PACKET_TIMESTAMP, it->ts_ns);
    p = uint_field(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = uint_field(p, PACKET_SEQUENCE_FLAGS, NEEDS_STATE);
    p = bytes_field(p, PACKET_TRACK_EVENT, event, event_len);
    if (interned)
        p = len_field(p, PACKET_INTERNED, interned);
    if (fresh) {
        p = len_field(p, INTERNED_EVENT_NAME, entry);
        p = bytes_field(uint_field(p, INTERNED_IID, iid), INTERNED_NAME, name, name_len);
    }
    if (pf->stack_len) {
        memcpy(p, pf->stack_data, pf->stack_len);
        p += pf->stack_len;
    }
    at__out_commit(pf->f.o, (char *)p);
    return 0;
}

/* ---- The format ---------------------------------------------------------------------------- */

static void perfetto_destroy(void *state)
{
    struct perfetto *pf = state;
    if (pf) {
        at__hmap_free(&pf->interned);
        free(pf->stack_data);
        free(pf->event);
    }
    at__tl_format_destroy(pf);
}

static void *perfetto_create(const struct decode *d)
{
    return at__tl_format_create(d, sizeof(struct perfetto), put_track, put_item);
}

static int perfetto_begin(struct out *o, const struct decode *d)
{
    (void)d;
    return put_header(o);
}

static int perfetto_end(struct out *o, const struct decode *d, const struct summary *s)
{
    (void)s;
    return at__tl_format_finish(o, d);
}

const struct output_ops at__perfetto_ops = {
    .name = "perfetto",
    .create = perfetto_create,
    .destroy = perfetto_destroy,
    .begin = perfetto_begin,
    .event = at__tl_format_event,
    .end = perfetto_end,
};
