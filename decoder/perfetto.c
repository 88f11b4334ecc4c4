/* --format perfetto: the Perfetto trace format (a protobuf `Trace`: a sequence of TracePacket),
 * which ui.perfetto.dev and trace_processor open, built from the tracks and items of
 * timeline.c. Every event is a TrackEvent with an interned name; tracks are TrackDescriptor
 * packets, written before their first event.
 *
 * The encoding is written here by hand: it is a few varint, fixed64 and length-delimited
 * fields, and Debian's protobuf-c would need generated code for Perfetto's large schema to
 * write them. Field numbers are those of Perfetto's published protos; tests/proto/
 * perfetto_min.proto declares the subset used, and the tests decode our output with it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "at_codec.h"
#include "decode.h"
#include "hmap.h"
#include "output.h"
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

struct perfetto {
    struct tl_format f;
    struct hmap interned; /* (trace, what, kind), id -> event name iid */
    uint32_t next_iid;
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

/* The iid of the item's name; *fresh when this is its first use. Returns 0 or -ENOMEM. */
static int intern(struct perfetto *pf, const struct tl_item *it, uint64_t *iid, bool *fresh)
{
    uint64_t trace = (uint64_t)(it->track->trace - pf->f.tl.d->traces);
    uint8_t kind = it->what == TL_NAME_EVENT ? it->kind : 0;
    struct hkey key = {trace << 16 | (uint64_t)it->what << 8 | kind, it->id};
    uint32_t *found = at__hmap_get(&pf->interned, key);
    *fresh = !found;
    if (found) {
        *iid = *found;
        return 0;
    }
    *iid = ++pf->next_iid;
    return at__hmap_put(&pf->interned, key, (uint32_t)*iid);
}

/* The TrackEvent of an item, without its name, into p (EVENT_ROOM bytes). */
static uint8_t *track_event(uint8_t *p, const struct tl_item *it, uint64_t iid)
{
    p = uint_field(p, EVENT_TYPE, it->type);
    p = uint_field(p, EVENT_TRACK, it->track->uuid);
    if (iid)
        p = uint_field(p, EVENT_NAME_IID, iid);
    if (it->flow_out || it->flow_via)
        p = fixed64_field(p, EVENT_FLOW, it->flow_out | it->flow_via);
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
    uint8_t event[EVENT_ROOM];
    size_t event_len = (size_t)(track_event(event, it, iid) - event);
    if (fresh)
        entry = uint_size(INTERNED_IID, iid) + len_size(INTERNED_NAME, name_len);
    size_t interned = fresh ? len_size(INTERNED_EVENT_NAME, entry) : 0;
    size_t body = uint_size(PACKET_TIMESTAMP, it->ts_ns) + uint_size(PACKET_SEQUENCE_ID, SEQUENCE) +
                  uint_size(PACKET_SEQUENCE_FLAGS, NEEDS_STATE) +
                  len_size(PACKET_TRACK_EVENT, event_len) +
                  (fresh ? len_size(PACKET_INTERNED, interned) : 0);
    uint8_t *p = packet_start(pf->f.o, body);
    if (!p)
        return -ENOMEM;
    p = uint_field(p, PACKET_TIMESTAMP, it->ts_ns);
    p = uint_field(p, PACKET_SEQUENCE_ID, SEQUENCE);
    p = uint_field(p, PACKET_SEQUENCE_FLAGS, NEEDS_STATE);
    p = bytes_field(p, PACKET_TRACK_EVENT, event, event_len);
    if (fresh) {
        p = len_field(len_field(p, PACKET_INTERNED, interned), INTERNED_EVENT_NAME, entry);
        p = bytes_field(uint_field(p, INTERNED_IID, iid), INTERNED_NAME, name, name_len);
    }
    at__out_commit(pf->f.o, (char *)p);
    return 0;
}

/* ---- The format ---------------------------------------------------------------------------- */

static void perfetto_destroy(void *state)
{
    struct perfetto *pf = state;
    if (pf)
        at__hmap_free(&pf->interned);
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
