/* The actortrace file format, as C structs and constants. docs/FORMAT.md is the contract this
 * header matches; the recorder (preload/) writes it and the decoder (decoder/) reads it, and
 * neither includes the other's files. All integers are little-endian. */
#ifndef AT_FORMAT_H
#define AT_FORMAT_H

#include <stdint.h>

/* ---- File header: the first 16 bytes of a trace file ---------------------------------- */

#define AT_FILE_MAGIC                                                                              \
    "\x89"                                                                                         \
    "ATRACE\n" /* 8 bytes; the high byte catches 7-bit mangling */
#define AT_FILE_MAGIC_LEN      8
#define AT_FORMAT_MAJOR        2 /* a reader refuses a file whose major version it does not know */
#define AT_FORMAT_MINOR        6 /* additions a reader of the same major may ignore */
#define AT_FORMAT_MAJOR_OLDEST 1 /* the oldest major version tracedecode still reads */

struct at_file_header {
    char magic[AT_FILE_MAGIC_LEN];
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size; /* bytes from the file start to the first frame */
};

/* ---- Frames --------------------------------------------------------------------------- */

#define AT_FRAME_MAGIC       0x46525441u /* "ATRF" as little-endian bytes */
#define AT_FRAME_MAX_PAYLOAD (16u << 20) /* readers reject larger payload or raw sizes */
/* Readers reject an EVENTS frame of more events: with the payload limit alone, 2 M events of
 * 8 bytes each compress to a few hundred bytes and decode to 80 MiB. The recorder's largest
 * block (ACTORTRACE_BLOCK_KB=4096) holds 104,856. */
#define AT_FRAME_MAX_EVENTS (1u << 17)

enum at_frame_type {
    AT_FRAME_EVENTS = 1, /* one thread's block of events, columnar (see at_codec.h) */
    AT_FRAME_META = 2,   /* a sequence of metadata records (enum at_meta_type) */
    /* (minor version 3) several blocks of one thread, one payload: the header is followed by
     * an at_frame_blocks table, and the payload by each block's columns in the table's order */
    AT_FRAME_EVENTS_BLOCKS = 3,
};

enum at_frame_encoding {
    AT_ENC_RAW = 0,  /* payload is the raw bytes */
    AT_ENC_ZSTD = 1, /* payload is one zstd frame that decompresses to raw_size bytes */
    /* (minor version 4, EVENTS frames only) the blocks' events in the predicted encoding
     * (at_events_predict) instead of columns: stored as they are, or Huffman-coded as one
     * zstd frame without matches (at_events_entropy) */
    AT_ENC_PREDICTED = 2,
    AT_ENC_PREDICTED_ZSTD = 3,
    /* (minor version 5, EVENTS frames only) columns whose tsc deltas are in units of the step
     * the clock moves in, with their remainders (at_events_encode with a step): stored as they
     * are, or as one zstd frame */
    AT_ENC_STEPPED = 4,
    AT_ENC_STEPPED_ZSTD = 5,
    /* (minor version 6, EVENTS frames only) columns whose timestamps are indices on the lattice
     * the clock's values lie on, several residues mod a period, with their remainders
     * (at_events_encode with a lattice): stored as they are, or as one zstd frame */
    AT_ENC_LATTICE = 6,
    AT_ENC_LATTICE_ZSTD = 7,
};

struct at_frame_header {
    uint32_t magic;        /* AT_FRAME_MAGIC: the reader resyncs on it after damage */
    uint8_t type;          /* enum at_frame_type */
    uint8_t encoding;      /* enum at_frame_encoding */
    uint16_t header_size;  /* sizeof(struct at_frame_header) when written; skip the rest */
    uint32_t tid;          /* EVENTS: the recording thread; META: 0 */
    uint32_t seq;          /* EVENTS: process-wide block number, growing; META: per-file number */
    uint32_t count;        /* EVENTS: events in the payload; META: records */
    uint32_t payload_size; /* bytes stored after the header */
    uint32_t raw_size;     /* bytes after decoding the payload */
    uint32_t payload_crc;  /* crc32c of the payload bytes as stored */
    uint64_t first_tsc;    /* EVENTS: first and last event timestamps; META: 0 */
    uint64_t last_tsc;
    uint32_t torn;       /* EVENTS: slots left uncommitted when the block was taken */
    uint32_t header_crc; /* crc32c of the header bytes before this field */
};

#define AT_FRAME_HEADER_SIZE 56
_Static_assert(sizeof(struct at_frame_header) == AT_FRAME_HEADER_SIZE, "frame header layout");

/* The block table of an AT_FRAME_EVENTS_BLOCKS frame, right after its 56 header bytes and
 * counted in its header_size: count entries follow. The header's seq is the first entry's,
 * its count, torn and raw_size the entries' sums, its first_tsc and last_tsc their extremes.
 * header_crc does not cover the table; crc does. */
#define AT_FRAME_MAX_BLOCKS 64
struct at_frame_blocks {
    uint32_t count; /* entries, 2 to AT_FRAME_MAX_BLOCKS */
    uint32_t crc;   /* crc32c of the count entries */
};

/* One block of an AT_FRAME_EVENTS_BLOCKS frame: what an EVENTS frame's header says of its one
 * block, and where its columns are in the decoded payload (after the previous entries'). */
struct at_frame_block {
    uint32_t seq;      /* the block's process-wide number */
    uint32_t count;    /* its events */
    uint32_t torn;     /* its slots left uncommitted */
    uint32_t raw_size; /* bytes of its columns */
    uint64_t first_tsc, last_tsc;
};
_Static_assert(sizeof(struct at_frame_blocks) == 8, "frame block table layout");
_Static_assert(sizeof(struct at_frame_block) == 32, "frame block entry layout");

/* ---- Metadata records: u8 type, varint body length, body of varints and strings --------- */

enum at_meta_type {
    /* pid, ppid, block_slots, mode (enum at_mode), string exe, string ring_path, then (minor
     * version 2) string boot_id, string host: traces of one boot_id share CLOCK_MONOTONIC */
    AT_META_PROCESS = 1,
    /* tsc, mono_ns, real_ns: one calibration pair; the decoder interpolates between them */
    AT_META_CLOCK = 2,
    /* tid, tsc, string name: a thread started recording or was renamed */
    AT_META_THREAD = 3,
    /* tid, tsc: a thread ended; its last block precedes or follows in any order */
    AT_META_THREAD_EXIT = 4,
    /* space (enum at_name_space), id, string name */
    AT_META_NAME = 5,
    /* tid, reason (enum at_lost_reason), count, first_tsc, last_tsc */
    AT_META_LOST = 6,
    /* events_written, events_dropped, threads, blocks_written: the recorder stopped cleanly */
    AT_META_END = 7,
    /* events, string ring_path: `tracedecode --recover` appended the events the ring file held
     * (as EVENTS frames, with the ring's losses and clock samples) and removed the ring */
    AT_META_RECOVERED = 8,
    /* status (enum at_patch_status), string symbol, string object, string why (refused) */
    AT_META_PATCH = 9,
    /* id, string path, string build_id (hex, "" when none), runtime (1: the object defines a
     * function the recorder wraps; absent in older traces): a loaded object stack frames
     * point into (docs/STACKS.md) */
    AT_META_MODULE = 10,
    /* id, frames, then per frame: module id (0 = none), address (the ELF virtual address in
     * the module; the raw pc when module is 0), string function ("" = unknown), offset into
     * the function: a call stack, innermost frame first */
    AT_META_STACK = 11,
};

/* What entry patching did to one function of one object (docs/PATCHING.md). */
enum at_patch_status {
    AT_PATCH_DONE = 1,
    AT_PATCH_REFUSED = 2,
};

enum at_name_space {
    AT_NAME_MSG = 1,   /* id: the name field of events (a message type) */
    AT_NAME_ACTOR = 2, /* id: an actor id */
    AT_NAME_PATH = 3,  /* id: the path field of events */
    AT_NAME_EVENT = 4, /* id: a registered event kind (>= AT_EV_FIRST_REGISTERED) */
};

enum at_lost_reason {
    AT_LOST_DROPPED = 1,     /* no free block: the writer fell behind (drop mode) */
    AT_LOST_WRITE_ERROR = 2, /* the block was taken but could not be written to the file */
    AT_LOST_OVERWRITTEN = 3, /* overwrite mode replaced the block with newer events */
};

enum at_mode {
    AT_MODE_DROP = 0,
    AT_MODE_BLOCK = 1,
    AT_MODE_OVERWRITE = 2,
};

/* ---- The event record: how one event sits in memory and in the ring file ---------------- */

/* 40 bytes. The last 8 bytes are stored as one word after the rest (see at_record.h), so a
 * reader that sees kind != 0 sees the whole record. */
struct at_event {
    uint64_t tsc;   /* rdtsc at the call */
    uint64_t actor; /* the actor the event is about; 0 = unknown */
    uint64_t peer;  /* sender, parent, waker, worker or waited-on object; 0 = unknown */
    uint64_t msg;   /* message id; 0 = none */
    uint32_t name;  /* message name id (AT_NAME_MSG); 0 = none */
    uint16_t core;  /* CPU the thread ran on */
    uint8_t path;   /* path id (AT_NAME_PATH); 0 = none */
    uint8_t kind;   /* enum at_event_kind; 0 = slot not committed */
};
_Static_assert(sizeof(struct at_event) == 40, "event record layout");

/* An actor id (actor, peer) with this bit is an actor of another node (process, host), its id
 * there in the bits below: none of this trace's names is its. Below 2^53: exact in JSON. */
#define AT_ACTOR_REMOTE (1ull << 52)

/* ---- The ring file: the recorder's blocks, shared with the page cache ---------------------
 * The recorder keeps its blocks in a MAP_SHARED mapping of this file so that events survive a
 * SIGKILL; a clean exit removes it. It starts with one at_ring_header, then block_count blocks
 * of block_size bytes, each an at_ring_block followed by its event slots. The file grows with
 * use: block_count starts small and the recorder prepares more blocks (up to block_max) before
 * its threads need them. */

#define AT_RING_MAGIC "ATRING2\n"

/* One calibration pair, as in AT_META_CLOCK. */
struct at_ring_clock {
    uint64_t tsc, mono_ns, real_ns;
};

struct at_ring_header {
    char magic[8];
    uint32_t block_size;  /* bytes per block, header included */
    uint32_t block_count; /* blocks ready in the file; grows, stored with release */
    uint32_t pid;
    uint32_t block_max;            /* the most block_count grows to (ACTORTRACE_BUFFER_MB) */
    uint64_t start_ticks;          /* the process's start time: field 22 of /proc/PID/stat */
    uint64_t lost[4];              /* events lost so far, by enum at_lost_reason ([0] unused) */
    struct at_ring_clock clock[2]; /* the first clock sample and the latest (tsc 0: none) */
    char trace_path[3984];         /* the trace file this ring belongs to, NUL-terminated */
};
_Static_assert(sizeof(struct at_ring_header) == 4096, "ring header layout");

enum at_block_state {
    AT_BLOCK_FREE = 0,    /* in the pool; slots are zero */
    AT_BLOCK_FILLING = 1, /* owned by a recording thread */
    AT_BLOCK_FULL = 2,    /* handed to the writer, not yet in the trace file */
    AT_BLOCK_WRITING = 3, /* the writer is encoding it */
};

struct at_ring_block {
    uint32_t state; /* enum at_block_state; written with release, read with acquire */
    uint32_t tid;   /* owner while FILLING / FULL */
    uint32_t seq;   /* the block's process-wide number (frame header seq) */
    uint32_t capacity;
    uint32_t used;    /* slots taken, set at handoff (FULL); while FILLING scan for kind != 0 */
    uint32_t written; /* slots already in the trace (an overwrite-mode dump of a FILLING block) */
    uint32_t reserved[10];
    /* struct at_event slots[capacity] follow */
};
_Static_assert(sizeof(struct at_ring_block) == 64, "ring block layout");

#endif
