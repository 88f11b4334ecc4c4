/* Shim for CZMQ 4.2 (libczmq), the C binding of ZeroMQ whose zactor is how many C programs
 * write actors. docs/shims/czmq.md is the user's side of this file.
 *
 * Wrapped, and what each records:
 *   zactor_new        spawn, and names the actor after its task function; the task runs in a
 *                     trampoline that records step_begin / step_end around it, then exit
 *   zsys_create_pipe  pairs the two ends of the pipe (zactor_new makes every actor's pipe here)
 *   zloop_reader, zloop_poller, zloop_timer
 *                     the handler runs in a trampoline: step_begin / step_end
 *   zloop_destroy     frees those trampolines' state
 *   zstr_recv, zmsg_recv, zframe_recv, zsock_recv, zsock_vrecv, zsock_wait
 *                     park before a blocking receive (the outermost one); the message's recv
 *                     follows, or unpark when it took no new message
 *   zpoller_wait      park before, unpark after (peer: the actor at the other end of the
 *                     socket that woke it)
 *   zmq_msg_send, zmq_send, zmq_send_const, zmq_sendiov, zmq_msg_recv, zmq_recv, zmq_recviov
 *   (libzmq)          send / recv: one per message, at its first frame; a blocking receive
 *                     that none of the receives above made parks here (libzmq_park())
 *   zmq_close         zmq_close event for a socket that bound or connected; forgets the socket
 *   zmq_bind, zmq_connect, zmq_unbind, zmq_disconnect
 *   (libzmq)          zmq_bind, ... events: an ordinary socket's number, endpoint and type
 *                     (record_endpoint()); its messages carry fingerprints (fingerprint())
 *
 * Sends and receives are recorded where every CZMQ call ends up, whichever the program used
 * (zstr_*, zsock_send / recv, zmsg_*, zframe_*, zactor_send / recv): CZMQ hands each frame to
 * libzmq's zmq_msg_send / zmq_msg_recv (its zmq_sendmsg / zmq_recvmsg reach them through
 * libzmq's PLT). One message is one event however many CZMQ functions it went through, and the
 * messages CZMQ sends itself ($TERM, signals) are seen as what they are.
 *
 * Ids: the main thread is actor 1, "main"; each zactor gets the next number from 2, and so does
 * a thread that is neither when it first uses a socket ("thread-TID"). A message on a pipe is
 * numbered by the pipe and direction it travels and its rank in that direction (msg_id()), so
 * the k-th send from one end and the k-th receive at the other share an id; a message on any
 * other socket has a fingerprint in msg instead, which tracedecode matches between the ends of
 * a connection. Message names are interned first frames (name_of()). */
#include <czmq.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "actortrace.h"
#include "support.h"

AT_REAL(zactor_new);
AT_REAL(zsys_create_pipe);
AT_REAL(zloop_reader);
AT_REAL(zloop_poller);
AT_REAL(zloop_timer);
AT_REAL(zloop_destroy);
AT_REAL(zstr_recv);
AT_REAL(zmsg_recv);
AT_REAL(zframe_recv);
AT_REAL(zsock_vrecv);
AT_REAL(zsock_wait);
AT_REAL(zpoller_wait);
AT_REAL(zsock_resolve);
AT_REAL(zmq_msg_send);
AT_REAL(zmq_send);
AT_REAL(zmq_send_const);
AT_REAL(zmq_sendiov);
AT_REAL(zmq_msg_recv);
AT_REAL(zmq_recv);
AT_REAL(zmq_recviov);
AT_REAL(zmq_close);
AT_REAL(zmq_msg_data);
AT_REAL(zmq_msg_size);
AT_REAL(zmq_msg_more);
AT_REAL(zmq_getsockopt);
AT_REAL(zmq_bind);
AT_REAL(zmq_connect);
AT_REAL(zmq_unbind);
AT_REAL(zmq_disconnect);

static const struct at_shim shim = {
    .reals = AT_SHIM_REALS(
        AT_SHIM_REAL(zactor_new), AT_SHIM_REAL(zsys_create_pipe), AT_SHIM_REAL(zloop_reader),
        AT_SHIM_REAL(zloop_poller), AT_SHIM_REAL(zloop_timer), AT_SHIM_REAL(zloop_destroy),
        AT_SHIM_REAL(zstr_recv), AT_SHIM_REAL(zmsg_recv), AT_SHIM_REAL(zframe_recv),
        AT_SHIM_REAL(zsock_vrecv), AT_SHIM_REAL(zsock_wait), AT_SHIM_REAL(zpoller_wait),
        AT_SHIM_REAL(zsock_resolve), AT_SHIM_REAL(zmq_msg_send), AT_SHIM_REAL(zmq_send),
        AT_SHIM_REAL(zmq_send_const), AT_SHIM_REAL(zmq_sendiov), AT_SHIM_REAL(zmq_msg_recv),
        AT_SHIM_REAL(zmq_recv), AT_SHIM_REAL(zmq_recviov), AT_SHIM_REAL(zmq_close),
        AT_SHIM_REAL(zmq_msg_data), AT_SHIM_REAL(zmq_msg_size), AT_SHIM_REAL(zmq_msg_more),
        AT_SHIM_REAL(zmq_getsockopt), AT_SHIM_REAL(zmq_bind), AT_SHIM_REAL(zmq_connect),
        AT_SHIM_REAL(zmq_unbind), AT_SHIM_REAL(zmq_disconnect)),
    .runtime = "CZMQ",
};

/* ===== Registered paths and kinds ========================================================= */

enum label {
    PATH_RECV,
    PATH_WAIT,
    PATH_POLL,
    PATH_TASK,
    PATH_READER,
    PATH_POLLER,
    PATH_TIMER,
    PATH_SOCKETS,
    PATH_NAMES,
    KIND_SEND_FAILED, /* the first event kind: the labels from here on are kinds */
    KIND_TABLE_FULL,
    KIND_BIND,
    KIND_CONNECT,
    KIND_UNBIND,
    KIND_DISCONNECT,
    KIND_PIPE,
    KIND_CLOSE,
    LABELS
};
static const char *const label_names[LABELS] = {
    "recv",        "wait",       "poll",           "task",        "reader",     "poller",
    "timer",       "sockets",    "names",          "send_failed", "table_full", "zmq_bind",
    "zmq_connect", "zmq_unbind", "zmq_disconnect", "zmq_pipe",    "zmq_close"};
static unsigned label_ids[LABELS];
static const struct at_shim_labels labels = {label_names, KIND_SEND_FAILED, label_ids};

static unsigned label(enum label which)
{
    return at_shim_label(&labels, which);
}

/* One of the tables below is full: said once, on stderr and in the trace (a table_full event
 * whose path names the table). */
static void report_full(int *reported, enum label table, const char *consequence)
{
    /* relaxed: one report per table; nothing is published with it */
    if (__atomic_exchange_n(reported, 1, __ATOMIC_RELAXED))
        return;
    at__warn("CZMQ: the %s table is full; %s", label_names[table], consequence);
    at_record(label(KIND_TABLE_FULL), at_current_actor(), 0, 0, 0, label(table));
}

/* ===== Actors ============================================================================= */

#define MAIN_ACTOR 1

static uint64_t actor_count = MAIN_ACTOR; /* the last id handed out; atomic, relaxed */
static int main_named;                    /* atomic */
static __thread uint64_t thread_actor;    /* this thread's own id, 0 until first needed */

static uint64_t new_actor(void)
{
    /* relaxed: unique numbers, no order */
    return __atomic_add_fetch(&actor_count, 1, __ATOMIC_RELAXED);
}

static uint64_t name_thread(void)
{
    if (gettid() == getpid()) {
        /* relaxed: one thread names main; nothing is published with it */
        if (!__atomic_exchange_n(&main_named, 1, __ATOMIC_RELAXED))
            at_name_actor(MAIN_ACTOR, "main");
        return MAIN_ACTOR;
    }
    uint64_t id = new_actor();
    char name[32];
    snprintf(name, sizeof name, "thread-%d", (int)gettid());
    at_name_actor(id, name);
    return id;
}

/* The actor running on this thread: the one whose task or handler runs here, else the
 * thread's own id. */
static inline uint64_t self_actor(void)
{
    uint64_t actor = at_current_actor();
    if (actor == 0)
        actor = thread_actor;
    if (AT_UNLIKELY(actor == 0))
        actor = thread_actor = name_thread();
    return actor;
}

/* Names actor `id` after its task: the task's symbol, or "file+0xOFFSET" for a function the
 * dynamic symbol table does not name (a static function, a program built without -rdynamic). */
static void name_task(uint64_t id, zactor_fn *task)
{
    Dl_info info;
    void *address = (void *)task;
    if (!dladdr(address, &info))
        return;
    if (info.dli_sname && info.dli_saddr == address) {
        at_name_actor(id, info.dli_sname);
        return;
    }
    const char *file = info.dli_fname ? info.dli_fname : "?";
    const char *slash = strrchr(file, '/');
    char name[256];
    snprintf(name, sizeof name, "%s+0x%lx", slash ? slash + 1 : file,
             (unsigned long)((char *)address - (char *)info.dli_fbase));
    at_name_actor(id, name);
}

/* ===== Message names ======================================================================
 * A message's name is its first frame when that is 1 to 32 printable ASCII characters (CZMQ
 * commands: "PING", "$TERM"), interned: a table that threads read without a lock, filled under
 * names_lock, each slot published by its id with release after its name was registered. Other
 * first frames get generic names; so do new strings once the table is three quarters full. The
 * first NAME_EAGER strings are named when first seen; after that, a string is named from its
 * second sighting (remembered by hash in `seen`), so that payloads that happen to be short
 * text, each sent once, cannot fill the table before the program's commands get there.
 * A name is compared as its length and up to four 8-byte words, padded with spaces. */

#define NAME_MAX_LEN 32
#define NAME_WORDS   (NAME_MAX_LEN / 8)
#define NAME_SLOTS   1024u
#define NAME_EAGER   256u
#define SEEN_SLOTS   4096u
/* Above the small ids other runtimes' shims use, yet two bytes in a trace's varints. */
#define NAME_ID_BASE 0x1000u
#define BYTES(b)     (0x0101010101010101ull * (b))

enum {
    NAME_SIGNAL = NAME_ID_BASE + 1, /* zsock_signal's 8-byte frame */
    NAME_EMPTY,
    NAME_BINARY, /* not printable, or longer than NAME_MAX_LEN */
    NAME_OTHER,  /* the table is full */
    NAME_FIRST_INTERNED = NAME_ID_BASE + 16,
};
static const char *const generic_names[] = {"$SIGNAL", "(empty)", "(binary)", "(other)"};

struct text {
    uint64_t words[NAME_WORDS];
    uint32_t len;
    uint32_t id; /* in the table: 0 = free slot; stored last, with release */
};

static struct text names[NAME_SLOTS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned names_used;                      /* under names_lock */
static uint32_t next_name = NAME_FIRST_INTERNED; /* under names_lock */
static int names_full, generics_named;           /* atomic */
static int names_reported;                       /* atomic */
static unsigned seen[SEEN_SLOTS];                /* under names_lock: hashes seen once */

/* Whether a string not in the table is to be named now (under names_lock). */
static int name_now(unsigned hash)
{
    if (names_used < NAME_EAGER)
        return 1;
    unsigned *cell = &seen[hash % SEEN_SLOTS];
    if (*cell == hash)
        return 1;
    *cell = hash;
    return 0;
}

/* A generic name id, its names registered on first use. */
static uint32_t generic(uint32_t id)
{
    /* acquire: pairs with the release store below (under names_lock), after the names */
    if (AT_UNLIKELY(!__atomic_load_n(&generics_named, __ATOMIC_ACQUIRE))) {
        pthread_mutex_lock(&names_lock);
        if (!generics_named)
            for (unsigned i = 0; i < sizeof generic_names / sizeof generic_names[0]; i++)
                at_name_msg(NAME_SIGNAL + i, generic_names[i]);
        /* release: pairs with the acquire load above on other threads */
        __atomic_store_n(&generics_named, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&names_lock);
    }
    return id;
}

/* 1 when every byte of w is printable ASCII (0x20 to 0x7e); exact, though these bit tricks
 * may not tell which byte is not. */
static int printable(uint64_t w)
{
    uint64_t below = (w - BYTES(0x20)) & ~w & BYTES(0x80);
    uint64_t above = ((w + BYTES(0x7f - 0x7e)) | w) & BYTES(0x80);
    return (below | above) == 0;
}

/* 1 to 8 bytes as a word, padded with spaces, without a call to memcpy: most names are short,
 * and this runs for every message sent. Two loads that may overlap read the same bytes. */
static uint64_t short_word(const unsigned char *bytes, size_t len)
{
    uint64_t word;
    if (len >= 4) {
        uint32_t low, high;
        memcpy(&low, bytes, 4);
        memcpy(&high, bytes + len - 4, 4);
        word = low | (uint64_t)high << (8 * (len - 4));
    } else {
        word = bytes[0] | (uint64_t)bytes[len / 2] << (8 * (len / 2)) |
               (uint64_t)bytes[len - 1] << (8 * (len - 1));
    }
    return len == 8 ? word : word | BYTES(' ') << (8 * len);
}

/* Loads a frame of 1 to NAME_MAX_LEN bytes; returns its slot hash, 0 when not printable. */
static unsigned load_text(struct text *text, const void *data, size_t len)
{
    for (unsigned i = 0; i < NAME_WORDS; i++)
        text->words[i] = BYTES(' ');
    if (len <= 8)
        text->words[0] = short_word(data, len);
    else
        memcpy(text->words, data, len);
    text->len = (uint32_t)len;
    uint64_t hash = len;
    for (unsigned i = 0; i < (len + 7) / 8; i++) {
        if (!printable(text->words[i]))
            return 0;
        hash = (hash ^ text->words[i]) * 0x9e3779b97f4a7c15ull;
    }
    return (unsigned)(hash >> 40) | 1;
}

static int same_text(const struct text *a, const struct text *b)
{
    for (unsigned i = 0; i < NAME_WORDS; i++)
        if (a->words[i] != b->words[i])
            return 0;
    return a->len == b->len;
}

static void fill_slot(struct text *slot, const struct text *text)
{
    char copy[NAME_MAX_LEN + 1];
    memcpy(copy, text->words, text->len);
    copy[text->len] = '\0';
    uint32_t id = next_name++;
    names_used++;
    memcpy(slot->words, text->words, sizeof slot->words);
    slot->len = text->len;
    at_name_msg(id, copy); /* before the id is published: no event names it earlier */
    __atomic_store_n(&slot->id, id, __ATOMIC_RELEASE);
}

static uint32_t intern(const struct text *text, unsigned hash)
{
    uint32_t id = generic(NAME_OTHER);
    pthread_mutex_lock(&names_lock);
    for (unsigned n = 0, i = hash % NAME_SLOTS; n < NAME_SLOTS; n++, i = (i + 1) % NAME_SLOTS) {
        struct text *slot = &names[i];
        if (slot->id && same_text(slot, text)) {
            id = slot->id;
            break;
        }
        if (slot->id == 0) {
            if (names_used >= NAME_SLOTS / 4 * 3) {
                /* relaxed: a flag read after names_lock (or as a hint without it) */
                __atomic_store_n(&names_full, 1, __ATOMIC_RELAXED);
            } else if (name_now(hash)) {
                fill_slot(slot, text);
                id = slot->id;
            }
            break;
        }
    }
    pthread_mutex_unlock(&names_lock);
    /* relaxed: stored under names_lock, which this thread just released */
    if (__atomic_load_n(&names_full, __ATOMIC_RELAXED))
        report_full(&names_reported, PATH_NAMES, "new message names show as \"(other)\"");
    return id;
}

static int is_signal(const void *frame)
{
    uint64_t value;
    memcpy(&value, frame, sizeof value);
    return (value & ~0xffull) == 0x7766554433221100ull; /* zsock_signal's magic + status */
}

/* The name id of a message whose first frame is data[0..size). Lock-free once the name is
 * known. */
static uint32_t lookup(const void *data, size_t size)
{
    if (size == 8 && is_signal(data))
        return generic(NAME_SIGNAL);
    struct text text;
    unsigned hash = size <= NAME_MAX_LEN ? load_text(&text, data, size) : 0;
    if (hash == 0)
        return generic(NAME_BINARY);
    for (unsigned n = 0, i = hash % NAME_SLOTS; n < NAME_SLOTS; n++, i = (i + 1) % NAME_SLOTS) {
        const struct text *slot = &names[i];
        /* acquire: pairs with the release store of id after the slot's text is written */
        uint32_t id = __atomic_load_n(&slot->id, __ATOMIC_ACQUIRE);
        if (id == 0)
            break;
        if (same_text(slot, &text))
            return id;
    }
    /* relaxed: a hint; a name missed here gets "(other)", as when the table is full */
    if (__atomic_load_n(&names_full, __ATOMIC_RELAXED))
        return generic(NAME_OTHER);
    return intern(&text, hash);
}

/* The last short name this thread looked up: a thread often sends one command over and over. */
static __thread struct {
    uint64_t word;
    uint32_t len, id;
} last_name;

static uint32_t name_of(const void *data, size_t size)
{
    if (size == 0)
        return generic(NAME_EMPTY);
    if (size > 8)
        return lookup(data, size);
    uint64_t word = short_word(data, size);
    if (word != last_name.word || size != last_name.len) {
        uint32_t id = lookup(data, size);
        if (id == NAME_OTHER)
            return id; /* not kept: the string may be named at its next sighting */
        last_name.id = id;
        last_name.word = word;
        last_name.len = (uint32_t)size;
    }
    return last_name.id;
}

/* ===== Sockets and pipes ==================================================================
 * Every socket that carries a message gets an `end`, found by its libzmq handle in a table
 * that threads read without a lock. A socket is used by one thread at a time (libzmq's rule),
 * so an end's counters belong to whichever thread uses it. The two ends of a pipe made by
 * zsys_create_pipe are allocated together and point at each other. */

#define SEQ_BITS   31
#define PIPE_LIMIT (1u << 21) /* pipe numbers wrap here: ids stay below 2^53, exact in JSON */
#define RECENT     16         /* names of the last messages sent from an end */

struct end {
    void *handle;            /* the libzmq socket */
    zsock_t *sock;           /* a pipe end's zsock_t: a task finds its own end by it */
    struct end *other;       /* the pipe's other end; NULL for any other socket */
    struct pipe *pipe;       /* the allocation the end lives in */
    uint64_t base;           /* id of the first message sent from this end; 0 when not a pipe */
    uint64_t owner;          /* the actor that used the end last; atomic, relaxed: the thread at
                                the other end reads it to name the actor at this one */
    uint32_t sent, received; /* whole messages, counted by the thread using the socket */
    uint8_t send_more, recv_more; /* inside a multi-frame message */
    /* Ordinary sockets (not a pipe's ends): the socket's number in its zmq_bind / zmq_connect
     * events and message fingerprints (0 for a pipe end), and `lead`, the frames a message
     * carries before the one its peer sees first: 1 on a ROUTER (the routing id), else 0. */
    uint32_t number, lead;
    /* A bind or connect was recorded: its close is recorded too. Plain: libzmq requires a full
     * barrier when a socket moves between threads. */
    uint8_t joined;
    uint32_t send_frames, recv_frames; /* frames of the current message passed so far */
    /* The current message's envelope delimiter (an empty frame followed by more) was passed:
     * REQ and REP add and remove it out of sight, so both ends record the frame after it. */
    uint8_t send_delimited, recv_delimited;
    /* recent[seq % RECENT] = seq << 32 | name id, stored (relaxed) before the message goes to
     * libzmq, whose hand-over orders it before the receive: the receiver takes the name from
     * here when seq matches, and reads the frame only when it fell further behind. */
    uint64_t recent[RECENT];
};

struct pipe {
    struct end end[2];
    int open; /* ends still in the table; atomic: the last one closed frees the pipe */
};

#define TABLE_BITS 14
#define TABLE_SIZE (1u << TABLE_BITS)

/* A slot's handle is set once, under table_lock, with release; its end is replaced (NULL when
 * the socket is closed, a new end when libzmq reuses the address) with release. */
static struct slot {
    void *handle;
    struct end *end;
} table[TABLE_SIZE];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned table_used; /* under table_lock */
static int table_full;      /* atomic: new sockets are no longer tracked */
static int table_reported;  /* atomic */
/* Set (release) once a socket was put off its chain, into a closed socket's slot anywhere: from
 * then on a lookup that misses goes through the whole table instead of stopping at a free
 * slot. That happens only when three quarters of the slots have held a socket: the table then
 * holds as many open sockets as it has slots, however many were opened and closed before. */
static int displaced;
static uint32_t pipe_count;       /* atomic */
static uint32_t table_generation; /* bumped, with release, when a slot's end changes */
static uint32_t socket_count;     /* atomic: the last number given to an ordinary socket */

/* This thread's last socket: most threads use one or two, and a lookup is then a compare. A
 * socket's address is reused only after it was closed, which moved the generation on. */
static __thread struct {
    void *handle;
    struct end *end;
    uint32_t generation;
} last;

static unsigned slot_of(const void *handle)
{
    return (unsigned)(((uintptr_t)handle >> 4) * 0x9e3779b97f4a7c15ull >> (64 - TABLE_BITS));
}

static struct slot *find_slot(const void *handle)
{
    /* acquire: pairs with put's release store of displaced, before the slot it fills */
    int anywhere = __atomic_load_n(&displaced, __ATOMIC_ACQUIRE);
    for (unsigned n = 0, i = slot_of(handle); n < TABLE_SIZE; n++, i = (i + 1) % TABLE_SIZE) {
        /* acquire: pairs with put's release store of handle, after the slot's end */
        void *key = __atomic_load_n(&table[i].handle, __ATOMIC_ACQUIRE);
        if (key == handle)
            return &table[i];
        if (key == NULL && !anywhere)
            return NULL;
    }
    return NULL;
}

/* Under table_lock: a closed socket's slot anywhere in the table, or TABLE_SIZE. */
static unsigned any_closed_slot(void)
{
    for (unsigned i = 0; i < TABLE_SIZE; i++)
        if (table[i].handle && !table[i].end)
            return i;
    return TABLE_SIZE;
}

static struct end *find(const void *handle)
{
    struct slot *slot = handle ? find_slot(handle) : NULL;
    /* acquire: pairs with the release stores of slot->end (the end's fields are set) */
    return slot ? __atomic_load_n(&slot->end, __ATOMIC_ACQUIRE) : NULL;
}

/* Under table_lock. Returns 0, or -ENOSPC when the table is too full to take a new socket. */
static int put(struct end *end)
{
    struct slot *slot = find_slot(end->handle);
    if (slot) {
        /* release: pairs with find's acquire load of slot->end; the generation tells
         * track's cache */
        __atomic_store_n(&slot->end, end, __ATOMIC_RELEASE);
        __atomic_add_fetch(&table_generation, 1, __ATOMIC_RELEASE);
        return 0;
    }
    /* The first slot on the handle's chain that is empty or a closed socket's: a slot's handle
     * is never set back to NULL, so every chain through a reused slot stays whole. */
    unsigned i = slot_of(end->handle);
    while (table[i].handle && table[i].end)
        i = (i + 1) % TABLE_SIZE;
    if (!table[i].handle && table_used >= TABLE_SIZE / 4 * 3) {
        i = any_closed_slot();
        if (i == TABLE_SIZE) {
            /* relaxed: a flag; track reads it only to report and to stop adding (see put) */
            __atomic_store_n(&table_full, 1, __ATOMIC_RELAXED);
            return -ENOSPC;
        }
        /* release: pairs with find_slot's acquire load: probe the whole table from now */
        __atomic_store_n(&displaced, 1, __ATOMIC_RELEASE);
    }
    table_used += !table[i].handle;
    /* end: relaxed, published by the release store of handle (find_slot's acquire load) */
    __atomic_store_n(&table[i].end, end, __ATOMIC_RELAXED);
    __atomic_store_n(&table[i].handle, end->handle, __ATOMIC_RELEASE);
    __atomic_add_fetch(&table_generation, 1, __ATOMIC_RELEASE);
    return 0;
}

static int socket_type(void *handle); /* with the endpoints' code, below */

/* Numbers an ordinary socket, and learns whether its messages start after a routing id. */
static void number_socket(struct end *end)
{
    /* relaxed: unique numbers, no order */
    end->number = __atomic_add_fetch(&socket_count, 1, __ATOMIC_RELAXED);
    end->lead = socket_type(end->handle) == ZMQ_ROUTER;
}

/* Adds the ends of a new pipe, or of a lone socket (ends = 1); returns NULL on failure. */
static struct pipe *add(void *const handles[], zsock_t *const socks[], int ends)
{
    struct pipe *pipe = calloc(1, sizeof *pipe);
    if (!pipe)
        return NULL;
    /* relaxed: unique numbers, no order */
    uint64_t number = ends == 2 ? __atomic_add_fetch(&pipe_count, 1, __ATOMIC_RELAXED) : 0;
    number = number ? (number - 1) % (PIPE_LIMIT - 1) + 1 : 0;
    for (int i = 0; i < ends; i++) {
        struct end *end = &pipe->end[i];
        *end = (struct end){.handle = handles[i], .sock = socks[i], .pipe = pipe};
        end->other = ends == 2 ? &pipe->end[1 - i] : NULL;
        end->base = number << 32 | (uint64_t)i;
        if (ends == 1)
            number_socket(end);
    }
    pthread_mutex_lock(&table_lock);
    int added = 0;
    while (added < ends && put(&pipe->end[added]) == 0)
        added++;
    pipe->open = added;
    pthread_mutex_unlock(&table_lock);
    if (added == 0)
        free(pipe);
    return added == ends ? pipe : NULL; /* a half-added pipe is freed when its end closes */
}

/* The end of a socket about to carry a message; NULL when it cannot be tracked (no socket: the
 * call fails with ENOTSOCK, and a table entry for it would never be found again). */
static struct end *track(void *handle)
{
    if (!handle)
        return NULL;
    /* acquire: pairs with the release increments after each change of the table */
    uint32_t generation = __atomic_load_n(&table_generation, __ATOMIC_ACQUIRE);
    if (AT_LIKELY(handle == last.handle && generation == last.generation))
        return last.end;
    struct end *end = find(handle);
    /* relaxed: table_full is a flag (see put) */
    if (!end && !__atomic_load_n(&table_full, __ATOMIC_RELAXED)) {
        zsock_t *no_sock = NULL;
        struct pipe *pipe = add(&handle, &no_sock, 1);
        end = pipe ? &pipe->end[0] : NULL;
    }
    /* relaxed: table_full is a flag (see put) */
    if (!end && __atomic_load_n(&table_full, __ATOMIC_RELAXED))
        report_full(&table_reported, PATH_SOCKETS,
                    "messages on sockets opened from now on have no ids or peers");
    last.handle = handle;
    last.end = end;
    last.generation = generation;
    return end;
}

static void forget(void *handle)
{
    if (!find(handle))
        return;
    pthread_mutex_lock(&table_lock);
    struct slot *slot = find_slot(handle);
    struct end *end = slot ? slot->end : NULL;
    if (end) {
        /* release: as in put; the generation's increment makes track's cache miss */
        __atomic_store_n(&slot->end, NULL, __ATOMIC_RELEASE);
        __atomic_add_fetch(&table_generation, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&table_lock);
    /* acq_rel: the last of the pipe's two ends to close frees it, after the other's uses */
    if (end && __atomic_sub_fetch(&end->pipe->open, 1, __ATOMIC_ACQ_REL) == 0)
        free(end->pipe);
}

static uint64_t owner_of(const struct end *end)
{
    /* relaxed: the actor last seen using the end, a hint stored by set_owner */
    return end ? __atomic_load_n(&end->owner, __ATOMIC_RELAXED) : 0;
}

static void set_owner(struct end *end, uint64_t actor)
{
    if (end && owner_of(end) != actor)
        /* relaxed: a hint read by owner_of; a racing store leaves either actor */
        __atomic_store_n(&end->owner, actor, __ATOMIC_RELAXED);
}

/* Id of the message with rank `seq` among those sent from `from` (0 when not a pipe):
 * bits 32-52 the pipe's number, bits 1-31 the rank, bit 0 the end it left from. A pipe's
 * messages both ways thus have ids close together, which the trace's delta encoding keeps to a
 * byte or two. */
static uint64_t msg_id(const struct end *from, uint32_t seq)
{
    return from && from->base ? from->base | (uint64_t)(seq & ((1u << SEQ_BITS) - 1)) << 1 : 0;
}

/* The ids of the next message sent from `end`, and of the next one received there (its
 * peer's next send). */
static uint64_t next_out(const struct end *end)
{
    return end ? msg_id(end, end->sent) : 0;
}

static uint64_t next_in(const struct end *end)
{
    return end && end->other ? msg_id(end->other, end->received) : 0;
}

/* The actor at the other end of a pipe; 0 when not a pipe. */
static uint64_t peer_of(const struct end *end)
{
    return end ? owner_of(end->other) : 0;
}

/* ===== Messages ===========================================================================
 * A message is recorded at its first frame: a send before libzmq takes it (it cannot reach
 * the receiver earlier), a recv once libzmq has handed it over. The counters move when its
 * last frame has gone through. A frame's bytes are read only for its name: those zmq_send /
 * zmq_recv were given, or a zmq_msg_t's. */

static __thread uint32_t recvs_recorded; /* recv events of this thread, for unpark() */

struct frame {
    zmq_msg_t *msg;
    const void *data;
    size_t size;
};

/* Points a zmq_msg_t's frame at its bytes. */
static void load(struct frame *frame)
{
    if (!frame->msg)
        return;
    AT_SHIM_RESOLVE(&shim, real_zmq_msg_data);
    AT_SHIM_RESOLVE(&shim, real_zmq_msg_size);
    frame->data = real_zmq_msg_data(frame->msg);
    frame->size = real_zmq_msg_size(frame->msg);
    frame->msg = NULL;
}

static uint32_t frame_name(struct frame *frame)
{
    load(frame);
    return name_of(frame->data, frame->size);
}

/* Fingerprints, in the msg field of a message on an ordinary socket: bit 63 set, bits 40-62
 * the socket's number, bits 24-39 the frame's size (65535 when larger), bits 0-23 a hash of
 * its first 16 bytes. The peer's socket sees the same frame, so the decoder matches the k-th
 * send and receive of one fingerprint on the two ends of a connection. 0 when the recorder is
 * off, or the frame was cut short by zmq_recv's buffer. */
#define FINGERPRINT     (1ull << 63)
#define SOCKET_MASK     ((1u << 23) - 1)
#define FINGERPRINT_MAX 0xffffu

static uint64_t fingerprint(const struct end *end, struct frame *frame)
{
    load(frame);
    if (frame->size == SIZE_MAX || !at_enabled())
        return 0;
    const unsigned char *bytes = frame->data;
    size_t size = frame->size;
    uint64_t first = 0, second = 0;
    if (size > 8) {
        memcpy(&first, bytes, 8);
        memcpy(&second, bytes + (size >= 16 ? 8 : size - 8), 8);
    } else if (size > 0) {
        first = short_word(bytes, size);
    }
    uint64_t hash = ((first * 0x9e3779b97f4a7c15ull) ^ second) * 0xc2b2ae3d27d4eb4full;
    uint64_t bounded = size < FINGERPRINT_MAX ? size : FINGERPRINT_MAX;
    return FINGERPRINT | (uint64_t)(end->number & SOCKET_MASK) << 40 | bounded << 24 | hash >> 40;
}

/* Whether an ordinary socket's message starts at this frame (the first, after the routing
 * id on a ROUTER and after an envelope delimiter), counting a delimiter as it passes. */
static int starts(struct end *end, uint32_t frames, uint8_t *delimited, struct frame *frame,
                  int more)
{
    if (frames != end->lead + *delimited)
        return 0;
    if (!end->number)
        return 1;
    load(frame);
    if (frame->size == 0 && more && !*delimited) {
        *delimited = 1;
        return 0;
    }
    return 1;
}

/* The msg of a message sent from `end`: its id on a pipe, its fingerprint on another socket. */
static uint64_t sent_msg(const struct end *end, struct frame *frame)
{
    return end && end->number ? fingerprint(end, frame) : next_out(end);
}

/* Before a frame goes to libzmq: records send if it starts a message (see starts()), and
 * returns the name it recorded (0 for another frame). */
static uint32_t send_begin(struct end *end, struct frame *frame, int more)
{
    if (end && !starts(end, end->send_frames, &end->send_delimited, frame, more))
        return 0;
    uint64_t sender = self_actor();
    uint32_t name = frame_name(frame);
    if (end) {
        set_owner(end, sender);
        /* relaxed: one word with its own sequence number, checked by the reader (sent_name) */
        __atomic_store_n(&end->recent[end->sent % RECENT], (uint64_t)end->sent << 32 | name,
                         __ATOMIC_RELAXED);
    }
    at_record(AT_EV_SEND, peer_of(end), sender, sent_msg(end, frame), name, 0);
    return name;
}

/* After the call. A recorded send whose call failed is marked by the same fields, and its id
 * goes to the next message. */
static void send_end(struct end *end, struct frame *frame, uint32_t name, int result, int flags)
{
    if (AT_UNLIKELY(result < 0)) {
        int saved = errno;
        if (name)
            at_record(label(KIND_SEND_FAILED), peer_of(end), self_actor(), sent_msg(end, frame),
                      name, 0);
        errno = saved;
    } else if (end) {
        end->send_more = (flags & ZMQ_SNDMORE) != 0;
        end->send_frames = end->send_more ? end->send_frames + 1 : 0;
        end->send_delimited &= end->send_more;
        end->sent += !end->send_more;
    }
}

/* The name the sender gave the next message to arrive at `end`, or 0. */
static uint32_t sent_name(const struct end *end)
{
    if (!end || !end->other)
        return 0;
    /* relaxed: pairs with send_begin's store; the sequence in the word says if it is the one */
    uint64_t recent =
        __atomic_load_n(&end->other->recent[end->received % RECENT], __ATOMIC_RELAXED);
    return recent >> 32 == end->received ? (uint32_t)recent : 0;
}

static void received(struct end *end, struct frame *frame, int more)
{
    if (!end || starts(end, end->recv_frames, &end->recv_delimited, frame, more)) {
        uint64_t receiver = self_actor();
        uint32_t name = sent_name(end);
        set_owner(end, receiver);
        recvs_recorded++;
        if (!name)
            name = frame_name(frame);
        uint64_t msg = end && end->number ? fingerprint(end, frame) : next_in(end);
        at_record(AT_EV_RECV, receiver, peer_of(end), msg, name, 0);
    }
    if (end) {
        end->recv_more = more != 0;
        end->recv_frames = more ? end->recv_frames + 1 : 0;
        end->recv_delimited &= more != 0;
        end->received += !more;
    }
}

AT_EXPORT int zmq_msg_send(zmq_msg_t *msg, void *socket, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_msg_send);
    if (!socket) /* fails with ENOTSOCK: no message */
        return real_zmq_msg_send(msg, socket, flags);
    struct end *end = track(socket);
    struct frame frame = {msg, NULL, 0};
    uint32_t name = send_begin(end, &frame, flags & ZMQ_SNDMORE);
    int result = real_zmq_msg_send(msg, socket, flags);
    send_end(end, &frame, name, result, flags);
    return result;
}

/* zmq_send and zmq_send_const: one frame from the caller's buffer. */
static int send_buffer(int (*real)(void *, const void *, size_t, int), void *socket,
                       const void *buf, size_t len, int flags)
{
    if (!socket) /* fails with ENOTSOCK: no message */
        return real(socket, buf, len, flags);
    struct end *end = track(socket);
    struct frame frame = {NULL, buf, len};
    uint32_t name = send_begin(end, &frame, flags & ZMQ_SNDMORE);
    int result = real(socket, buf, len, flags);
    send_end(end, &frame, name, result, flags);
    return result;
}

AT_EXPORT int zmq_send(void *socket, const void *buf, size_t len, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_send);
    return send_buffer(real_zmq_send, socket, buf, len, flags);
}

AT_EXPORT int zmq_send_const(void *socket, const void *buf, size_t len, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_send_const);
    return send_buffer(real_zmq_send_const, socket, buf, len, flags);
}

/* Without ZMQ_SNDMORE, libzmq sends each of the count buffers as a message of its own; they are
 * forwarded one call each, so that each is recorded. With it, the buffers are the frames of one
 * message, which the call completes. */
AT_EXPORT int zmq_sendiov(void *socket, struct iovec *iov, size_t count, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_sendiov);
    if (!iov || count == 0 || !socket)
        return real_zmq_sendiov(socket, iov, count, flags);
    if (!(flags & ZMQ_SNDMORE) && count > 1) {
        int result = 0;
        for (size_t i = 0; i < count && result >= 0; i++)
            result = zmq_sendiov(socket, &iov[i], 1, flags);
        return result;
    }
    struct end *end = track(socket);
    struct frame frame = {NULL, iov[0].iov_base, iov[0].iov_len};
    uint32_t name = send_begin(end, &frame, 0);
    int result = real_zmq_sendiov(socket, iov, count, flags);
    send_end(end, &frame, name, result, flags & ~ZMQ_SNDMORE);
    return result;
}

static int park(enum label path); /* with the other parking code, below */
static void unpark(int parked, enum label path, uint64_t waker);

/* A blocking receive made at libzmq by no wrapped CZMQ receive (zsock_brecv, which is variadic
 * with no va_list twin to wrap; a program or handler using libzmq's API) parks there, at a
 * message's first frame: the same events as a zstr_recv. Returns -1 when the call does not
 * park here, else park()'s result, for libzmq_unpark(). */
static int libzmq_park(const struct end *end, int flags)
{
    if (at_in_wrapper() || (flags & ZMQ_DONTWAIT) || (end && end->recv_more))
        return -1;
    return park(PATH_RECV);
}

static void libzmq_unpark(int parked)
{
    if (parked >= 0)
        unpark(parked, PATH_RECV, 0);
}

/* Whether more frames of the message wait at the socket; leaves errno as it was. */
static int more_frames(void *socket)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_getsockopt);
    int saved = errno, more = 0;
    size_t more_size = sizeof more;
    real_zmq_getsockopt(socket, ZMQ_RCVMORE, &more, &more_size);
    errno = saved;
    return more;
}

AT_EXPORT int zmq_msg_recv(zmq_msg_t *msg, void *socket, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_msg_recv);
    AT_SHIM_RESOLVE(&shim, real_zmq_msg_more);
    struct end *end = track(socket);
    int parked = libzmq_park(end, flags);
    int result = real_zmq_msg_recv(msg, socket, flags);
    if (result >= 0)
        received(end, &(struct frame){msg, NULL, 0}, real_zmq_msg_more(msg));
    libzmq_unpark(parked);
    return result;
}

/* zmq_recv copies the frame into the caller's buffer, cut to len: a cut frame whose name must
 * be read from it is named as binary, and whether more frames follow is asked of the socket. */
AT_EXPORT int zmq_recv(void *socket, void *buf, size_t len, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_recv);
    struct end *end = track(socket);
    int parked = libzmq_park(end, flags);
    int result = real_zmq_recv(socket, buf, len, flags);
    if (result >= 0) {
        size_t size = (size_t)result <= len ? (size_t)result : SIZE_MAX;
        received(end, &(struct frame){NULL, buf, size}, more_frames(socket));
    }
    libzmq_unpark(parked);
    return result;
}

/* zmq_recviov takes up to *count frames of one message, into buffers it allocates. */
AT_EXPORT int zmq_recviov(void *socket, struct iovec *iov, size_t *count, int flags)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_recviov);
    struct end *end = track(socket);
    int parked = libzmq_park(end, flags);
    int result = real_zmq_recviov(socket, iov, count, flags);
    if (result > 0)
        received(end, &(struct frame){NULL, iov[0].iov_base, iov[0].iov_len}, more_frames(socket));
    libzmq_unpark(parked);
    return result;
}

static void record_close(void *socket); /* with the endpoints' code, below */

AT_EXPORT int zmq_close(void *socket)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_close);
    record_close(socket);
    forget(socket);
    return real_zmq_close(socket);
}

/* ===== Endpoints ==========================================================================
 * Every bind, connect, unbind and disconnect of an ordinary socket is recorded once, as an
 * event of a registered kind (zmq_bind, ...): actor the actor making the call, peer the
 * socket's number (as in its fingerprints), name the endpoint (a message name id from
 * ENDPOINT_ID_BASE, its string the endpoint), path the socket type ("PUSH"). CZMQ's
 * zsock_bind / zsock_connect, zsock_attach and the zsock_new_* helpers all end at libzmq's
 * zmq_bind / zmq_connect, once each (CZMQ retries a port range's failed binds: only the one
 * that succeeds is recorded). A bind records the endpoint libzmq reports it bound
 * (ZMQ_LAST_ENDPOINT): a wildcard or ephemeral port resolved to the one it got. The pipes
 * zsys_create_pipe makes are paired instead, and their endpoints are not recorded. */

#define ENDPOINT_ID_BASE 0x100000u /* far above the message names' ids */

static __thread int making_pipe; /* zsys_create_pipe is running on this thread */
static uint32_t endpoint_count;  /* atomic */
static const char *const socket_types[] = {"PAIR",   "PUB",  "SUB",  "REQ",  "REP",  "DEALER",
                                           "ROUTER", "PULL", "PUSH", "XPUB", "XSUB", "STREAM"};

/* The socket's ZMQ_TYPE, or -1; leaves errno as it was. */
static int socket_type(void *handle)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_getsockopt);
    int saved = errno, type = -1;
    size_t size = sizeof type;
    if (real_zmq_getsockopt(handle, ZMQ_TYPE, &type, &size) != 0)
        type = -1;
    errno = saved;
    return type;
}

static unsigned type_path(int type)
{
    int known = type >= 0 && type < (int)(sizeof socket_types / sizeof socket_types[0]);
    return known ? at_path_register(socket_types[type]) : 0;
}

/* Recorded even before the recorder started (at_enabled() is 0 until a process's first event):
 * this event starts it, so the messages on the socket, which follow, have fingerprints. */
static void record_endpoint(enum label kind, void *socket, const char *endpoint)
{
    struct end *end = track(socket);
    if (!end || !end->number)
        return;
    AT_SHIM_RESOLVE(&shim, real_zmq_getsockopt);
    char bound[256];
    size_t size = sizeof bound;
    if (kind == KIND_BIND && real_zmq_getsockopt(socket, ZMQ_LAST_ENDPOINT, bound, &size) == 0)
        endpoint = bound;
    /* relaxed: unique numbers, no order */
    uint32_t id = ENDPOINT_ID_BASE + __atomic_add_fetch(&endpoint_count, 1, __ATOMIC_RELAXED);
    at_name_msg(id, endpoint);
    at_record(label(kind), self_actor(), end->number, 0, id, type_path(socket_type(socket)));
    end->joined = 1;
}

/* A close ends all of the socket's binds and connects (libzmq closes their connections, and
 * frees the endpoints for another socket to bind): a zmq_close event, as a zmq_bind's without
 * an endpoint, for a socket whose bind or connect was recorded. */
static void record_close(void *socket)
{
    struct end *end = find(socket);
    if (!end || !end->number || !end->joined)
        return;
    int saved = errno;
    at_record(label(KIND_CLOSE), self_actor(), end->number, 0, 0, type_path(socket_type(socket)));
    errno = saved;
}

static int endpoint_call(int (*real)(void *, const char *), enum label kind, void *socket,
                         const char *endpoint)
{
    int result = real(socket, endpoint);
    if (result == 0 && endpoint && !making_pipe) {
        int saved = errno;
        record_endpoint(kind, socket, endpoint);
        errno = saved;
    }
    return result;
}

AT_EXPORT int zmq_bind(void *socket, const char *endpoint)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_bind);
    return endpoint_call(real_zmq_bind, KIND_BIND, socket, endpoint);
}

AT_EXPORT int zmq_connect(void *socket, const char *endpoint)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_connect);
    return endpoint_call(real_zmq_connect, KIND_CONNECT, socket, endpoint);
}

AT_EXPORT int zmq_unbind(void *socket, const char *endpoint)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_unbind);
    return endpoint_call(real_zmq_unbind, KIND_UNBIND, socket, endpoint);
}

AT_EXPORT int zmq_disconnect(void *socket, const char *endpoint)
{
    AT_SHIM_RESOLVE(&shim, real_zmq_disconnect);
    return endpoint_call(real_zmq_disconnect, KIND_DISCONNECT, socket, endpoint);
}

/* ===== Spawning actors ==================================================================== */

struct spawn {
    zactor_fn *task;
    void *args;
    uint64_t actor, parent;
    struct pipe *pipe; /* set by zsys_create_pipe while zactor_new runs */
};

static __thread struct spawn *spawning; /* the zactor_new running on this thread */

AT_EXPORT zsock_t *zsys_create_pipe(zsock_t **backend_p)
{
    AT_SHIM_RESOLVE(&shim, real_zsys_create_pipe);
    AT_SHIM_RESOLVE(&shim, real_zsock_resolve);
    making_pipe++;
    zsock_t *frontend = real_zsys_create_pipe(backend_p);
    making_pipe--;
    if (frontend && backend_p && *backend_p) {
        int saved = errno;
        zsock_t *socks[2] = {frontend, *backend_p};
        void *handles[2] = {real_zsock_resolve(socks[0]), real_zsock_resolve(socks[1])};
        struct pipe *pipe = add(handles, socks, 2);
        if (spawning && !spawning->pipe)
            spawning->pipe = pipe;
        else if (pipe) /* a pipe of no actor: its ends' owners are known when first used */
            at_record(label(KIND_PIPE), self_actor(), 0, 0, 0, 0);
        errno = saved;
    }
    return frontend;
}

/* The task's end is its own; the other end belongs to the actor that spawned it. */
static void claim_pipe(const struct spawn *spawn, zsock_t *own)
{
    for (int i = 0; spawn->pipe && i < 2; i++) {
        if (spawn->pipe->end[i].sock == own) {
            set_owner(&spawn->pipe->end[i], spawn->actor);
            set_owner(spawn->pipe->end[i].other, spawn->parent);
        }
    }
}

static void task_trampoline(zsock_t *pipe, void *arg)
{
    struct spawn *spawn = arg;
    thread_actor = spawn->actor; /* the thread is the actor's, to its end */
    claim_pipe(spawn, pipe);
    uint32_t depth = at_depth_reset();
    uint64_t previous = at_set_current_actor(spawn->actor);
    at_record(AT_EV_STEP_BEGIN, spawn->actor, 0, 0, 0, label(PATH_TASK));
    spawn->task(pipe, spawn->args);
    at_record(AT_EV_STEP_END, spawn->actor, 0, 0, 0, label(PATH_TASK));
    at_record(AT_EV_EXIT, spawn->actor, 0, 0, 0, 0);
    at_set_current_actor(previous);
    at_depth_restore(depth);
    free(spawn);
}

/* zactor_new returns NULL only before it starts the thread (CZMQ 4.2), so the trampoline's
 * state is ours to free then, and the trampoline's once the thread runs. */
AT_EXPORT zactor_t *zactor_new(zactor_fn task, void *args)
{
    AT_SHIM_RESOLVE(&shim, real_zactor_new);
    struct spawn *spawn = malloc(sizeof *spawn);
    if (!spawn)
        return real_zactor_new(task, args);
    *spawn = (struct spawn){task, args, new_actor(), self_actor(), NULL};
    name_task(spawn->actor, task);
    at_record(AT_EV_SPAWN, spawn->actor, spawn->parent, 0, 0, 0);
    struct spawn *outer = spawning;
    spawning = spawn;
    zactor_t *actor = real_zactor_new(task_trampoline, spawn);
    spawning = outer;
    if (!actor)
        free(spawn);
    return actor;
}

/* ===== zloop handlers =====================================================================
 * Reader, poller and timer handlers run in trampolines that record step_begin / step_end
 * around them. zloop copies readers and pollers into the poll set it dispatches from, so one
 * ended during a dispatch may still be called once, and a timer ended by zloop_timer_end may
 * still be called in the same pass: their state lives until zloop_destroy. A timer that has
 * run its number of times is freed after its last call, when zloop deletes it too. */

struct handler {
    zloop_t *loop;
    union {
        zloop_reader_fn *reader;
        zloop_fn *poller;
        zloop_timer_fn *timer;
    } fn;
    void *arg;
    void *socket;                /* reader, poller: the libzmq socket; NULL for a poller's fd */
    size_t times_left;           /* timer: calls still to come; 0 = forever */
    struct handler *prev, *next; /* in `handlers`, under handlers_lock */
};

static struct handler *handlers;
static pthread_mutex_t handlers_lock = PTHREAD_MUTEX_INITIALIZER;

/* Returns the handler, linked in, or NULL when out of memory (the program's handler is then
 * registered as it is, and runs without steps). */
static struct handler *add_handler(zloop_t *loop, void *arg, void *socket)
{
    struct handler *handler = calloc(1, sizeof *handler);
    if (!handler)
        return NULL;
    *handler = (struct handler){.loop = loop, .arg = arg, .socket = socket};
    pthread_mutex_lock(&handlers_lock);
    handler->next = handlers;
    if (handlers)
        handlers->prev = handler;
    handlers = handler;
    pthread_mutex_unlock(&handlers_lock);
    return handler;
}

/* Under handlers_lock. */
static void unlink_handler(struct handler *handler)
{
    if (handler->prev)
        handler->prev->next = handler->next;
    else
        handlers = handler->next;
    if (handler->next)
        handler->next->prev = handler->prev;
}

static void remove_handler(struct handler *handler)
{
    pthread_mutex_lock(&handlers_lock);
    unlink_handler(handler);
    pthread_mutex_unlock(&handlers_lock);
    free(handler);
}

/* A handler's step: the actor running the loop, and msg, the message the handler was called
 * for (0 when none). */
struct step {
    uint64_t actor, msg, previous_actor;
    uint32_t depth;
    enum label path;
};

static struct step step_begin(uint64_t msg, enum label path)
{
    struct step step = {.actor = self_actor(), .msg = msg, .path = path};
    step.depth = at_depth_reset();
    step.previous_actor = at_set_current_actor(step.actor);
    at_record(AT_EV_STEP_BEGIN, step.actor, 0, msg, 0, label(path));
    return step;
}

static void step_end(const struct step *step)
{
    at_record(AT_EV_STEP_END, step->actor, 0, step->msg, 0, label(step->path));
    at_set_current_actor(step->previous_actor);
    at_depth_restore(step->depth);
}

/* msg: the id of the message that made the socket readable, which the handler receives. */
static int reader_trampoline(zloop_t *loop, zsock_t *sock, void *arg)
{
    const struct handler *handler = arg;
    struct step step = step_begin(next_in(track(handler->socket)), PATH_READER);
    int result = handler->fn.reader(loop, sock, handler->arg);
    step_end(&step);
    return result;
}

static int poller_trampoline(zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    const struct handler *handler = arg;
    int readable = handler->socket && item && (item->revents & ZMQ_POLLIN);
    struct step step = step_begin(readable ? next_in(track(handler->socket)) : 0, PATH_POLLER);
    int result = handler->fn.poller(loop, item, handler->arg);
    step_end(&step);
    return result;
}

static int timer_trampoline(zloop_t *loop, int timer_id, void *arg)
{
    struct handler *handler = arg;
    struct step step = step_begin(0, PATH_TIMER);
    int result = handler->fn.timer(loop, timer_id, handler->arg);
    step_end(&step);
    /* zloop counts a call down unless the handler returned -1, and deletes the timer at 0 */
    if (result != -1 && handler->times_left && --handler->times_left == 0)
        remove_handler(handler);
    return result;
}

AT_EXPORT int zloop_reader(zloop_t *loop, zsock_t *sock, zloop_reader_fn handler, void *arg)
{
    AT_SHIM_RESOLVE(&shim, real_zloop_reader);
    AT_SHIM_RESOLVE(&shim, real_zsock_resolve);
    struct handler *reader = add_handler(loop, arg, real_zsock_resolve(sock));
    if (!reader)
        return real_zloop_reader(loop, sock, handler, arg);
    reader->fn.reader = handler;
    int result = real_zloop_reader(loop, sock, reader_trampoline, reader);
    if (result != 0)
        remove_handler(reader);
    return result;
}

AT_EXPORT int zloop_poller(zloop_t *loop, zmq_pollitem_t *item, zloop_fn handler, void *arg)
{
    AT_SHIM_RESOLVE(&shim, real_zloop_poller);
    AT_SHIM_RESOLVE(&shim, real_zsock_resolve);
    void *socket = item && item->socket ? real_zsock_resolve(item->socket) : NULL;
    struct handler *poller = add_handler(loop, arg, socket);
    if (!poller)
        return real_zloop_poller(loop, item, handler, arg);
    poller->fn.poller = handler;
    int result = real_zloop_poller(loop, item, poller_trampoline, poller);
    if (result != 0)
        remove_handler(poller);
    return result;
}

AT_EXPORT int zloop_timer(zloop_t *loop, size_t delay, size_t times, zloop_timer_fn handler,
                          void *arg)
{
    AT_SHIM_RESOLVE(&shim, real_zloop_timer);
    struct handler *timer = add_handler(loop, arg, NULL);
    if (!timer)
        return real_zloop_timer(loop, delay, times, handler, arg);
    timer->fn.timer = handler;
    timer->times_left = times;
    int id = real_zloop_timer(loop, delay, times, timer_trampoline, timer);
    if (id < 0)
        remove_handler(timer);
    return id;
}

/* Before the loop is freed, so that a new loop at the same address keeps its handlers. */
AT_EXPORT void zloop_destroy(zloop_t **self_p)
{
    AT_SHIM_RESOLVE(&shim, real_zloop_destroy);
    zloop_t *loop = self_p ? *self_p : NULL;
    pthread_mutex_lock(&handlers_lock);
    for (struct handler *handler = handlers, *next; loop && handler; handler = next) {
        next = handler->next;
        if (handler->loop == loop) {
            unlink_handler(handler);
            free(handler);
        }
    }
    pthread_mutex_unlock(&handlers_lock);
    real_zloop_destroy(self_p);
}

/* ===== Parking ============================================================================
 * A blocking receive parks before the call (the outermost one: zsock_recv runs zsock_vrecv,
 * zmsg_recv, zframe_recv); the recv of the message it takes wakes it. A call that returns
 * without taking a new message (it failed, timed out, or took a later frame of a message
 * already begun) records unpark, and so does every zpoller_wait. A park is recorded whether or
 * not a message was already waiting. */

static __thread uint32_t recvs_at_park; /* recvs_recorded when the outermost park was */

static int park(enum label path)
{
    if (!at_enter())
        return 0;
    recvs_at_park = recvs_recorded;
    at_record(AT_EV_PARK, self_actor(), 0, 0, 0, label(path));
    return 1;
}

static void unpark(int parked, enum label path, uint64_t waker)
{
    if (parked && recvs_recorded == recvs_at_park) {
        int saved = errno;
        at_record(AT_EV_UNPARK, self_actor(), waker, 0, 0, label(path));
        errno = saved;
    }
    at_leave();
}

AT_EXPORT char *zstr_recv(void *source)
{
    AT_SHIM_RESOLVE(&shim, real_zstr_recv);
    int parked = park(PATH_RECV);
    char *string = real_zstr_recv(source);
    unpark(parked, PATH_RECV, 0);
    return string;
}

AT_EXPORT zmsg_t *zmsg_recv(void *source)
{
    AT_SHIM_RESOLVE(&shim, real_zmsg_recv);
    int parked = park(PATH_RECV);
    zmsg_t *msg = real_zmsg_recv(source);
    unpark(parked, PATH_RECV, 0);
    return msg;
}

AT_EXPORT zframe_t *zframe_recv(void *source)
{
    AT_SHIM_RESOLVE(&shim, real_zframe_recv);
    int parked = park(PATH_RECV);
    zframe_t *frame = real_zframe_recv(source);
    unpark(parked, PATH_RECV, 0);
    return frame;
}

AT_EXPORT int zsock_vrecv(void *self, const char *picture, va_list argptr)
{
    AT_SHIM_RESOLVE(&shim, real_zsock_vrecv);
    int parked = park(PATH_RECV);
    int result = real_zsock_vrecv(self, picture, argptr);
    unpark(parked, PATH_RECV, 0);
    return result;
}

/* Variadic: forwarded through zsock_vrecv, as CZMQ's own zsock_recv does. */
AT_EXPORT int zsock_recv(void *self, const char *picture, ...)
{
    va_list argptr;
    va_start(argptr, picture);
    int result = zsock_vrecv(self, picture, argptr);
    va_end(argptr);
    return result;
}

/* zsock_wait receives until a signal, dropping other messages (each still a recv). */
AT_EXPORT int zsock_wait(void *self)
{
    AT_SHIM_RESOLVE(&shim, real_zsock_wait);
    int parked = park(PATH_WAIT);
    int result = real_zsock_wait(self);
    unpark(parked, PATH_WAIT, 0);
    return result;
}

/* The actor at the other end of the socket zpoller_wait returned (0 when not a pipe). */
static uint64_t waker(void *reader)
{
    AT_SHIM_RESOLVE(&shim, real_zsock_resolve);
    struct end *end = reader ? find(real_zsock_resolve(reader)) : NULL;
    return peer_of(end);
}

AT_EXPORT void *zpoller_wait(zpoller_t *self, int timeout)
{
    AT_SHIM_RESOLVE(&shim, real_zpoller_wait);
    int parked = park(PATH_POLL);
    void *reader = real_zpoller_wait(self, timeout);
    int saved = errno;
    uint64_t woken_by = parked ? waker(reader) : 0;
    errno = saved;
    unpark(parked, PATH_POLL, woken_by);
    return reader;
}
