/* Shim for CAF, the C++ Actor Framework, 0.17.6 (Debian 12's libcaf_core.so.0.17.6).
 * docs/shims/caf.md is the user's side of this file.
 *
 * Written in C against CAF's mangled names, so that the library needs no libstdc++: each
 * wrapper below is named after the symbol it replaces, and is reached whenever libcaf_core or
 * the program calls that symbol through the PLT or a vtable (CAF's vtables are filled by
 * symbol relocations). A program without CAF never calls them and pays nothing.
 *
 * Wrapped, and what each records:
 *   scheduled_actor::launch              spawn (parent: the actor running on this thread),
 *                                        and the actor's name
 *   scheduled_actor::enqueue             send: a message put into an actor's mailbox
 *   worker<work_stealing>::exec_later    schedule: an actor queued on the running worker
 *   coordinator<work_stealing>::enqueue  schedule: an actor queued from outside the workers
 *   resumable::resume of scheduled_actor (the `_ZThn160_` thunk workers call)
 *                                        sets the running actor; after it: park, yield or
 *                                        exit, from its result
 *   scheduled_actor::mailbox_visitor::operator()(mailbox_element&)
 *                                        recv, then step_begin / step_end around the handler
 *   scheduled_actor::cleanup             exit of an actor terminated outside its own run
 *   detail::set_thread_name              marks CAF's worker threads, whose sleeps are parks
 *   nanosleep (libc)                     park (path "sleep") when a worker falls idle
 *
 * Layout facts read from CAF's headers, each computed from them by tests/targets/caf/layout.cpp and
 * compared with the constants below by tests/e2e/caf.sh:
 *   - an actor's control block sits CTRL_SIZE bytes before the actor, its id at CTRL_AID, its
 *     node's data at CTRL_NID;
 *   - a scheduled_actor's resumable base is at RESUMABLE_OFFSET (hence the thunk's name);
 *   - mailbox_element: sender (the sender's control block or NULL) at ELEM_SENDER, message_id
 *     at ELEM_MID, the message_view base at ELEM_VIEW; content() is that base's slot 2;
 *   - type_erased_tuple's slots: size() 5, type(pos) 7 (returns {type number, type_info *}
 *     in rax:rdx), get(pos) 8; actor's name() is slot 13 of its primary vtable.
 * The version guard (known_version) keeps these from being applied to any other build. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actortrace.h"
#include "support.h"

#define CAF_SONAME "libcaf_core.so.0.17.6"

#define CTRL_SIZE        64   /* CAF_CACHE_LINE_SIZE: the control block before each actor */
#define CTRL_AID         16   /* actor_control_block::aid */
#define CTRL_NID         24   /* actor_control_block::nid: its node's data, one pointer */
#define RESUMABLE_OFFSET 160  /* scheduled_actor's resumable base */
#define ELEM_VIEW        16   /* mailbox_element's message_view base */
#define ELEM_SENDER      24   /* mailbox_element::sender */
#define ELEM_MID         32   /* mailbox_element::mid */
#define WORKER_ID        40   /* worker<work_stealing>::id_ */
#define COORD_WORKERS    24   /* abstract_coordinator::num_workers_ */
#define COORD_NEXT       1352 /* coordinator<work_stealing>::data_.next_worker */

/* vtable slots */
#define VIEW_CONTENT     2  /* message_view::content() */
#define TUPLE_SIZE       5  /* type_erased_tuple::size() */
#define TUPLE_TYPE       7  /* type_erased_tuple::type(size_t) */
#define TUPLE_GET        8  /* type_erased_tuple::get(size_t) */
#define ACTOR_NAME       13 /* abstract_actor's name() */
#define RESUMABLE_RESUME 3  /* resumable::resume() */

#define MID_RESPONSE   0x8000000000000000ull /* message_id::response_flag_mask */
#define MID_REQUEST_ID 0x0FFFFFFFFFFFFFFFull /* message_id::request_id_mask */
#define ATOM_TYPE_NR   5                     /* type_nr<atom_value>::value */

/* resumable::resume_result */
enum { RESUME_LATER, AWAITING_MESSAGE, DONE };

#define SYM_LAUNCH _ZN3caf15scheduled_actor6launchEPNS_14execution_unitEbb
#define SYM_ENQUEUE                                                                                \
    _ZN3caf15scheduled_actor7enqueueESt10unique_ptrINS_15mailbox_elementENS_6detail8disposerEEPNS_14execution_unitE
#define SYM_EXEC_LATER                                                                             \
    _ZN3caf9scheduler6workerINS_6policy13work_stealingEE10exec_laterEPNS_9resumableE
#define SYM_CENTRAL                                                                                \
    _ZN3caf9scheduler11coordinatorINS_6policy13work_stealingEE7enqueueEPNS_9resumableE
#define SYM_RESUME      _ZThn160_N3caf15scheduled_actor6resumeEPNS_14execution_unitEm
#define SYM_VISIT       _ZN3caf15scheduled_actor15mailbox_visitorclERNS_15mailbox_elementE
#define SYM_CLEANUP     _ZN3caf15scheduled_actor7cleanupEONS_5errorEPNS_14execution_unitE
#define SYM_THREAD_NAME _ZN3caf6detail15set_thread_nameEPKc
#define NAME_OF(sym)    #sym
#define STRING(sym)     NAME_OF(sym)

/* The wrapped functions, each declared once: the wrappers below are their definitions, and
 * real_* are typed from them. unique_ptr arguments arrive as a pointer to the unique_ptr (it is
 * not trivially copyable, so the ABI passes it by invisible reference). */
AT_EXPORT void SYM_LAUNCH(void *actor, void *unit, bool lazy, bool hide);
AT_EXPORT void SYM_ENQUEUE(void *actor, void **element, void *unit);
AT_EXPORT void SYM_EXEC_LATER(void *worker, void *job);
AT_EXPORT void SYM_CENTRAL(void *coordinator, void *job);
/* Its address also tells a scheduled actor's vtable (actor_of_job). */
AT_EXPORT int SYM_RESUME(void *job, void *unit, size_t max_throughput);
AT_EXPORT int SYM_VISIT(void *visitor, void *element);
AT_EXPORT bool SYM_CLEANUP(void *actor, void *error, void *unit);
AT_EXPORT void SYM_THREAD_NAME(const char *name);

AT_REAL_AS(real_launch, SYM_LAUNCH);
AT_REAL_AS(real_enqueue, SYM_ENQUEUE);
AT_REAL_AS(real_exec_later, SYM_EXEC_LATER);
AT_REAL_AS(real_central, SYM_CENTRAL);
AT_REAL_AS(real_resume, SYM_RESUME);
AT_REAL_AS(real_visit, SYM_VISIT);
AT_REAL_AS(real_cleanup, SYM_CLEANUP);
AT_REAL_AS(real_set_thread_name, SYM_THREAD_NAME);
AT_REAL(nanosleep);

/* ===== The version guard ====================================================================
 * The first wrapper to run resolves the real functions and checks that the loaded libcaf_core
 * is the one this file knows, by its DT_SONAME (CAF puts the full version there). On any other
 * build the wrappers only forward, and one line on stderr says why. */

/* The DT_SONAME of the object that defines `address`, or NULL. */
static const char *soname_of(void *address)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return NULL;
    const char *strtab = NULL;
    ElfW(Xword) soname = 0;
    bool has_soname = false;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr; /* relocated by ld.so */
        if (d->d_tag == DT_SONAME) {
            soname = d->d_un.d_val;
            has_soname = true;
        }
    }
    if (strtab && (uintptr_t)strtab < map->l_addr)
        strtab += map->l_addr; /* where ld.so leaves the dynamic section unrelocated */
    return strtab && has_soname ? strtab + soname : NULL;
}

static int known_version(char *why, size_t size)
{
    const char *soname = real_enqueue ? soname_of((void *)real_enqueue) : NULL;
    if (soname && strcmp(soname, CAF_SONAME) == 0)
        return 0;
    snprintf(why, size, "%s is not %s, the CAF version this tracer knows",
             soname ? soname : "libcaf_core", CAF_SONAME);
    return -1;
}

#define REAL(real, sym) AT_SHIM_REAL_AS(real, STRING(sym))
static struct at_shim shim = {
    .reals = AT_SHIM_REALS(REAL(real_launch, SYM_LAUNCH), REAL(real_enqueue, SYM_ENQUEUE),
                           REAL(real_exec_later, SYM_EXEC_LATER), REAL(real_central, SYM_CENTRAL),
                           REAL(real_resume, SYM_RESUME), REAL(real_visit, SYM_VISIT),
                           REAL(real_cleanup, SYM_CLEANUP),
                           REAL(real_set_thread_name, SYM_THREAD_NAME), AT_SHIM_REAL(nanosleep)),
    .runtime = "CAF",
    .expected = "CAF's libcaf_core",
    .check = known_version,
    .untraced = "%s: CAF is not traced",
    .all_required = 1,
};

/* 1 when events are to be recorded; the reals are resolved either way. */
static inline int caf_ready(void)
{
    return at_shim_on(&shim);
}

/* ===== Paths ============================================================================== */

enum label {
    PATH_REQUEST,
    PATH_RESPONSE,
    PATH_MAILBOX,
    PATH_SLEEP,
    PATH_HIDDEN,
    PATH_INTERNAL,
    PATH_EXTERNAL,
    LABELS
};
static const char *const label_names[LABELS] = {"request", "response", "mailbox", "sleep",
                                                "hidden",  "internal", "external"};
static unsigned label_ids[LABELS];
static const struct at_shim_labels labels = {label_names, LABELS, label_ids};

static unsigned label(enum label which)
{
    return at_shim_label(&labels, which);
}

/* ===== Reading CAF's objects ============================================================== */

typedef void *(*content_fn)(void *view);
typedef size_t (*size_fn)(const void *tuple);
struct rtti {
    uint16_t type_nr;
    const void *type_info;
};
typedef struct rtti (*type_fn)(const void *tuple, size_t pos);
typedef const void *(*get_fn)(const void *tuple, size_t pos);
typedef const char *(*name_fn)(const void *actor);

static inline void *vslot(const void *object, long slot)
{
    return (*(void *const *const *)object)[slot];
}

static inline uint64_t read_u64(const void *base, ptrdiff_t offset)
{
    uint64_t value;
    memcpy(&value, (const char *)base + offset, sizeof value);
    return value;
}

static inline void *read_ptr(const void *base, ptrdiff_t offset)
{
    void *value;
    memcpy(&value, (const char *)base + offset, sizeof value);
    return value;
}

static inline uint64_t actor_id(const void *actor)
{
    return read_u64(actor, CTRL_AID - CTRL_SIZE);
}

/* The id of a message's sender, whose control block is `ctrl`, 0 for none; received by
 * `actor`, which is local. Every local actor's control block shares the system's node data;
 * a proxy of another node's actor (remoting) has that node's: its id is marked remote, as it
 * numbers actors of the other process. */
static inline uint64_t sender_id(const void *actor, const void *ctrl)
{
    if (!ctrl)
        return 0;
    uint64_t id = read_u64(ctrl, CTRL_AID);
    bool local = read_ptr(ctrl, CTRL_NID) == read_ptr(actor, CTRL_NID - CTRL_SIZE);
    return local ? id : id | AT_ACTOR_REMOTE;
}

/* request, response or plain, from the message id. */
static unsigned message_path(uint64_t mid)
{
    if (mid & MID_RESPONSE)
        return label(PATH_RESPONSE);
    return (mid & MID_REQUEST_ID) ? label(PATH_REQUEST) : 0;
}

/* ===== Message names ======================================================================
 * A message is named after its first element: the atom's text when it is an atom (CAF packs
 * up to 10 characters, 6 bits each, below a 0xF marker), else its type: CAF's name for a
 * built-in type ("@i32", "@str", "@exit", ...), the demangled C++ name for any other.
 * Built-in types have fixed ids (NAME_BASE + type number); atoms and other types are interned:
 * a table that threads read without a lock, filled under names_lock, each slot published by
 * its id (release) after its name was registered. */

#define NAME_BASE     0x2000u         /* above the ids other shims use; two bytes in a varint */
#define BUILTIN_TYPES 64              /* type numbers are 6 bits (type_token packs them so) */
#define CAF_TYPE_NRS  44              /* type_nrs: numbered_type_names has CAF_TYPE_NRS - 1 names */
#define NAME_EMPTY    (NAME_BASE + 0) /* type number 0 is never built in: free for this */
#define NAME_OTHER    (NAME_BASE + BUILTIN_TYPES) /* the table is full */
#define NAME_INTERNED (NAME_OTHER + 1)
#define NAME_SLOTS    1024u
#define TEXT_MAX      256

enum key_kind { KEY_ATOM = 1, KEY_TYPE };

struct interned {
    uint64_t key;  /* the atom's value, or the address of the type's type_info */
    uint32_t kind; /* enum key_kind */
    uint32_t id;   /* 0 = free slot; stored last, with release */
};

static struct interned names[NAME_SLOTS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned names_used;                    /* under names_lock */
static uint32_t next_name = NAME_INTERNED;     /* under names_lock */
static uint8_t fixed_named[BUILTIN_TYPES + 1]; /* set (release) under names_lock, read (acquire) */

static unsigned name_hash(uint32_t kind, uint64_t key)
{
    return (unsigned)((key ^ kind) * 0x9e3779b97f4a7c15ull >> 40);
}

/* The text of atom `value`; "(atom)" for a value CAF's encoding cannot produce. */
static void atom_text(uint64_t value, char *out, size_t size)
{
    static const char decoding[] =
        " 0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
    char reversed[10];
    size_t n = 0;
    while (value > 0xF && n < sizeof reversed) {
        reversed[n++] = decoding[value & 0x3F];
        value >>= 6;
    }
    if (value != 0xF) {
        snprintf(out, size, "(atom)");
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = reversed[n - 1 - i];
    out[n] = '\0';
}

/* A C++ type's name from its std::type_info (whose second word is the mangled name),
 * demangled by libstdc++'s __cxa_demangle, which every CAF program has loaded. */
static void type_text(const void *type_info, char *out, size_t size)
{
    const char *mangled = type_info ? read_ptr(type_info, sizeof(void *)) : NULL;
    if (!mangled) {
        snprintf(out, size, "(type)");
        return;
    }
    if (*mangled == '*')
        mangled++;
    char *(*demangle)(const char *, char *, size_t *, int *) =
        dlsym(RTLD_DEFAULT, "__cxa_demangle");
    int status = -1;
    char *readable = demangle ? demangle(mangled, NULL, NULL, &status) : NULL;
    snprintf(out, size, "%s", status == 0 && readable ? readable : mangled);
    free(readable);
}

/* Under names_lock: registers the name of a slot not yet taken, and publishes it. */
static void fill_name(struct interned *slot, uint32_t kind, uint64_t key)
{
    char text[TEXT_MAX];
    if (kind == KEY_ATOM)
        atom_text(key, text, sizeof text);
    else
        type_text((const void *)(uintptr_t)key, text, sizeof text);
    uint32_t id = next_name++;
    names_used++;
    slot->key = key;
    slot->kind = kind;
    at_name_msg(id, text); /* before the id is published: no event names it earlier */
    __atomic_store_n(&slot->id, id, __ATOMIC_RELEASE);
}

static uint32_t fixed_name(uint32_t nr);

/* Interns a new name; NAME_OTHER once the table is three quarters full. */
static uint32_t add_name(uint32_t kind, uint64_t key)
{
    uint32_t id = 0;
    pthread_mutex_lock(&names_lock);
    for (unsigned n = 0, i = name_hash(kind, key) % NAME_SLOTS; n < NAME_SLOTS;
         n++, i = (i + 1) % NAME_SLOTS) {
        struct interned *slot = &names[i];
        if (slot->id && slot->kind == kind && slot->key == key) {
            id = slot->id;
            break;
        }
        if (slot->id == 0) {
            if (names_used < NAME_SLOTS / 4 * 3) {
                fill_name(slot, kind, key);
                id = slot->id;
            }
            break;
        }
    }
    pthread_mutex_unlock(&names_lock);
    return id ? id : fixed_name(NAME_OTHER - NAME_BASE);
}

/* Lock-free once the name is known. */
static uint32_t interned_name(uint32_t kind, uint64_t key)
{
    for (unsigned n = 0, i = name_hash(kind, key) % NAME_SLOTS; n < NAME_SLOTS;
         n++, i = (i + 1) % NAME_SLOTS) {
        const struct interned *slot = &names[i];
        /* acquire: pairs with the release store of id after the slot's key is written */
        uint32_t id = __atomic_load_n(&slot->id, __ATOMIC_ACQUIRE);
        if (id == 0)
            break;
        if (slot->kind == kind && slot->key == key)
            return id;
    }
    return add_name(kind, key);
}

/* The text of a fixed name id: CAF's name of a built-in type (numbered_type_names[nr - 1]). */
static const char *fixed_text(uint32_t nr)
{
    if (nr == NAME_EMPTY - NAME_BASE)
        return "(empty)";
    if (nr == NAME_OTHER - NAME_BASE)
        return "(other)";
    const char *const *builtin = dlsym(RTLD_NEXT, "_ZN3caf19numbered_type_namesE");
    return builtin && nr < CAF_TYPE_NRS ? builtin[nr - 1] : "(builtin)";
}

/* NAME_BASE + nr, its name registered on first use. */
static uint32_t fixed_name(uint32_t nr)
{
    if (nr > BUILTIN_TYPES)
        nr = BUILTIN_TYPES;
    /* acquire: pairs with the release store below (under names_lock), after the name */
    if (AT_UNLIKELY(!__atomic_load_n(&fixed_named[nr], __ATOMIC_ACQUIRE))) {
        pthread_mutex_lock(&names_lock);
        if (!fixed_named[nr])
            at_name_msg(NAME_BASE + nr, fixed_text(nr));
        /* release: pairs with the acquire load above on other threads */
        __atomic_store_n(&fixed_named[nr], 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&names_lock);
    }
    return NAME_BASE + nr;
}

/* The name id of the message a mailbox element carries. Four virtual calls into CAF, none of
 * which allocates: content(), size(), type(0), and get(0) for an atom. */
static uint32_t message_name(void *element)
{
    void *view = (char *)element + ELEM_VIEW;
    const void *tuple = ((content_fn)vslot(view, VIEW_CONTENT))(view);
    if (((size_fn)vslot(tuple, TUPLE_SIZE))(tuple) == 0)
        return fixed_name(NAME_EMPTY - NAME_BASE);
    struct rtti type = ((type_fn)vslot(tuple, TUPLE_TYPE))(tuple, 0);
    if (type.type_nr == ATOM_TYPE_NR) {
        const void *atom = ((get_fn)vslot(tuple, TUPLE_GET))(tuple, 0);
        return interned_name(KEY_ATOM, read_u64(atom, 0));
    }
    if (type.type_nr != 0)
        return fixed_name(type.type_nr);
    return interned_name(KEY_TYPE, (uintptr_t)type.type_info);
}

/* ===== Messages in flight =================================================================
 * CAF reuses mailbox elements at the same address, so a message gets the tracer's own id at
 * its send, kept here by the element's address until the mailbox visitor takes it. Open
 * addressing over a fixed table: a slot's key is claimed with a CAS and never goes back to
 * empty (a taken message leaves a tombstone that the next send may claim), so a probe stops at
 * the first empty slot. A key found again is an element that was never handled (dropped by a
 * terminated actor) and is now reused: its entry is overwritten. The value fields need no
 * atomics: the send writes them before CAF's enqueue, whose queue orders them before the
 * visitor on the receiving thread reads them. A full table gives msg 0 (the decoder then
 * matches by mailbox order). */

#define INFLIGHT_BITS 15
#define INFLIGHT_MASK ((1u << INFLIGHT_BITS) - 1)
#define PROBES        64
#define TOMBSTONE     ((uintptr_t)1)

struct inflight {
    uintptr_t element; /* 0 = empty, TOMBSTONE, or a key; atomic */
    uint64_t msg;
    uint32_t name;
    uint32_t path;
};

static struct inflight inflight[1u << INFLIGHT_BITS];

static unsigned inflight_slot(const void *element)
{
    return (unsigned)(((uintptr_t)element >> 4) * 0x9e3779b97f4a7c15ull >> (64 - INFLIGHT_BITS));
}

static void remember(const void *element, const struct inflight *message)
{
    uintptr_t key = (uintptr_t)element;
    for (unsigned n = 0, i = inflight_slot(element); n < PROBES; n++, i = (i + 1) & INFLIGHT_MASK) {
        struct inflight *slot = &inflight[i];
        /* relaxed, as the CAS: only the key is claimed here; the value fields are ordered by
         * CAF's enqueue (see above) */
        uintptr_t seen = __atomic_load_n(&slot->element, __ATOMIC_RELAXED);
        bool mine =
            seen == key || ((seen == 0 || seen == TOMBSTONE) &&
                            __atomic_compare_exchange_n(&slot->element, &seen, key, false,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        if (mine) {
            slot->msg = message->msg;
            slot->name = message->name;
            slot->path = message->path;
            return;
        }
    }
}

/* The message sent in `element`, taken out of the table; msg 0 when it is not there. */
static struct inflight take(const void *element)
{
    uintptr_t key = (uintptr_t)element;
    for (unsigned n = 0, i = inflight_slot(element); n < PROBES; n++, i = (i + 1) & INFLIGHT_MASK) {
        struct inflight *slot = &inflight[i];
        /* relaxed: the element was handed here through CAF's queue, which ordered the send's
         * stores before this; the tombstone only lets a later send reuse the slot */
        uintptr_t seen = __atomic_load_n(&slot->element, __ATOMIC_RELAXED);
        if (seen == key) {
            struct inflight message = *slot;
            __atomic_store_n(&slot->element, TOMBSTONE, __ATOMIC_RELAXED);
            return message;
        }
        if (seen == 0)
            break;
    }
    return (struct inflight){0};
}

/* Message ids: each thread numbers its sends in a range of 2^32 of its own, so no two threads
 * share a counter. */
static uint32_t id_ranges; /* ranges handed out; atomic */
static __thread uint64_t next_msg;

static uint64_t new_msg_id(void)
{
    if (AT_UNLIKELY((uint32_t)next_msg == 0))
        /* relaxed: only unique ranges are needed, no order */
        next_msg = (uint64_t)__atomic_add_fetch(&id_ranges, 1, __ATOMIC_RELAXED) << 32 | 1;
    return next_msg++;
}

/* ===== Actors and workers ================================================================= */

static __thread void *resuming;   /* the actor whose resume runs on this thread */
static __thread int exit_pending; /* it terminated during that resume */
/* Timestamps shared with a later event of the same exchange (at_timestamp_after): the send's,
 * while CAF's enqueue runs, for the schedule it makes; the last step_end's in the running
 * resume, for the park or yield after it. */
static __thread struct at_stamp send_stamp, step_end_stamp;
static __thread int worker_thread, worker_idle;

/* Workers appear as the peer of schedule events, under ids of their own named caf.worker-N. */
#define WORKER_PEER   (1ull << 40)
#define WORKERS_NAMED 64
static uint8_t worker_named[WORKERS_NAMED]; /* atomic */

static uint64_t worker_peer(uint64_t worker)
{
    /* relaxed: the exchange picks the one thread that names the worker; nothing else */
    if (worker < WORKERS_NAMED && !__atomic_load_n(&worker_named[worker], __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&worker_named[worker], 1, __ATOMIC_RELAXED)) {
        char name[32];
        snprintf(name, sizeof name, "caf.worker-%u", (unsigned)worker);
        at_name_actor(WORKER_PEER + worker, name);
    }
    return WORKER_PEER + worker;
}

/* The scheduled actor behind a resumable, or NULL when the job is something else (CAF's own
 * helpers): a scheduled actor's resumable vtable holds our resume wrapper, since the vtable
 * was filled by a relocation against the symbol. */
static void *actor_of_job(void *job)
{
    return vslot(job, RESUMABLE_RESUME) == (void *)&SYM_RESUME ? (char *)job - RESUMABLE_OFFSET
                                                               : NULL;
}

/* CAF's name for the actor (a stateful actor's State::name), or its C++ type when CAF only
 * has the generic "scheduled_actor", without its template arguments (a typed actor's spell
 * out its whole interface). */
static void name_actor(const void *actor, uint64_t id)
{
    const char *name = ((name_fn)vslot(actor, ACTOR_NAME))(actor);
    if (name && strcmp(name, "scheduled_actor") != 0) {
        at_name_actor(id, name);
        return;
    }
    char text[TEXT_MAX];
    type_text(vslot(actor, -1), text, sizeof text); /* the vtable's type_info */
    char *arguments = strchr(text, '<');
    if (arguments && (size_t)(arguments - text) + sizeof "<...>" <= sizeof text)
        strcpy(arguments, "<...>");
    at_name_actor(id, text);
}

/* Made by a send's enqueue, the schedule takes the send's timestamp. */
static void record_schedule(void *job, uint64_t worker, enum label path)
{
    void *actor = actor_of_job(job);
    if (actor) {
        uint64_t stamp = at_timestamp_after(send_stamp);
        at_record_at(&stamp, AT_EV_SCHEDULE, actor_id(actor), worker_peer(worker), 0, 0,
                     label(path));
    }
}

/* Returns the send's timestamp. */
static struct at_stamp record_send(const void *actor, void *element)
{
    uint64_t mid = read_u64(element, ELEM_MID);
    struct inflight message = {
        .msg = new_msg_id(), .name = message_name(element), .path = message_path(mid)};
    remember(element, &message);
    uint64_t now = at_timestamp();
    at_record_at(&now, AT_EV_SEND, actor_id(actor),
                 sender_id(actor, read_ptr(element, ELEM_SENDER)), message.msg, message.name,
                 message.path);
    return at_stamp_of(now);
}

/* After a resume: the actor waits for messages, gives its worker up, or has ended; when a
 * step ended in the resume, stamped as that step's end (what CAF does between is look at the
 * mailbox). */
static void record_result(uint64_t actor, int result, int exited)
{
    uint64_t stamp = at_timestamp_after(step_end_stamp);
    if (result == AWAITING_MESSAGE)
        at_record_at(&stamp, AT_EV_PARK, actor, 0, 0, 0, label(PATH_MAILBOX));
    else if (result == RESUME_LATER)
        at_record_at(&stamp, AT_EV_YIELD, actor, 0, 0, 0, 0);
    if (exited)
        at_record_at(&stamp, AT_EV_EXIT, actor, 0, 0, 0, 0);
}

/* ===== The wrappers ======================================================================= */

AT_EXPORT void SYM_LAUNCH(void *actor, void *unit, bool lazy, bool hide)
{
    if (caf_ready()) {
        uint64_t id = actor_id(actor);
        name_actor(actor, id);
        at_record(AT_EV_SPAWN, id, at_current_actor(), 0, 0, hide ? label(PATH_HIDDEN) : 0);
    }
    real_launch(actor, unit, lazy, hide);
}

AT_EXPORT void SYM_ENQUEUE(void *actor, void **element, void *unit)
{
    if (!caf_ready() || !*element) {
        real_enqueue(actor, element, unit);
        return;
    }
    struct at_stamp outer_stamp = send_stamp;
    send_stamp = record_send(actor, *element);
    real_enqueue(actor, element, unit);
    send_stamp = outer_stamp;
}

AT_EXPORT void SYM_EXEC_LATER(void *worker, void *job)
{
    if (caf_ready())
        record_schedule(job, read_u64(worker, WORKER_ID), PATH_INTERNAL);
    real_exec_later(worker, job);
}

/* central_enqueue hands the job to worker next_worker % num_workers; read before the call,
 * that is the worker it picks unless another thread enqueues at the same time. */
AT_EXPORT void SYM_CENTRAL(void *coordinator, void *job)
{
    if (caf_ready()) {
        uint64_t workers = read_u64(coordinator, COORD_WORKERS);
        uint64_t next =
            /* relaxed: CAF's round-robin counter, read as a hint of the worker it picks */
            __atomic_load_n((uint64_t *)((char *)coordinator + COORD_NEXT), __ATOMIC_RELAXED);
        record_schedule(job, workers ? next % workers : 0, PATH_EXTERNAL);
    }
    real_central(coordinator, job);
}

AT_EXPORT int SYM_RESUME(void *job, void *unit, size_t max_throughput)
{
    if (!caf_ready())
        return real_resume(job, unit, max_throughput);
    void *actor = (char *)job - RESUMABLE_OFFSET;
    uint64_t id = actor_id(actor);
    void *outer = resuming;
    int outer_exit = exit_pending;
    struct at_stamp outer_stamp = step_end_stamp;
    resuming = actor;
    exit_pending = 0;
    step_end_stamp = (struct at_stamp){0};
    worker_idle = 0;
    uint64_t previous = at_set_current_actor(id);
    int result = real_resume(job, unit, max_throughput);
    at_set_current_actor(previous);
    record_result(id, result, exit_pending);
    resuming = outer;
    exit_pending = outer_exit;
    step_end_stamp = outer_stamp;
    return result;
}

/* One message taken out of the mailbox and handled. Everything about it is read before the
 * call: the element may be gone after. */
AT_EXPORT int SYM_VISIT(void *visitor, void *element)
{
    if (!caf_ready())
        return real_visit(visitor, element);
    const void *self = read_ptr(visitor, 0); /* mailbox_visitor::self */
    uint64_t actor = actor_id(self);
    struct inflight message = take(element);
    if (message.msg == 0)
        message.name = message_name(element); /* sent before the trace began */
    uint64_t taken = at_timestamp();          /* the recv and the step it starts */
    at_record_at(&taken, AT_EV_RECV, actor, sender_id(self, read_ptr(element, ELEM_SENDER)),
                 message.msg, message.name, message.path);
    at_record_at(&taken, AT_EV_STEP_BEGIN, actor, 0, message.msg, message.name, message.path);
    int result = real_visit(visitor, element);
    uint64_t ended = at_timestamp();
    at_record_at(&ended, AT_EV_STEP_END, actor, 0, message.msg, message.name, message.path);
    /* the resume this visit runs in, not a nested one's */
    if (self == resuming)
        step_end_stamp = at_stamp_of(ended);
    return result;
}

/* Returns true for the call that terminated the actor. Inside the actor's own resume the exit
 * is recorded after it, with its result; otherwise (an actor no longer reachable, cleaned up
 * by whoever dropped the last reference) here. */
AT_EXPORT bool SYM_CLEANUP(void *actor, void *error, void *unit)
{
    int traced = caf_ready();
    uint64_t id = traced ? actor_id(actor) : 0;
    bool terminated = real_cleanup(actor, error, unit);
    if (traced && terminated) {
        if (actor == resuming)
            exit_pending = 1;
        else
            at_record(AT_EV_EXIT, id, 0, 0, 0, 0);
    }
    return terminated;
}

/* Worker threads name themselves "caf.multiplexer" in CAF 0.17. */
AT_EXPORT void SYM_THREAD_NAME(const char *name)
{
    if (caf_ready() && name && strcmp(name, "caf.multiplexer") == 0)
        worker_thread = 1;
    real_set_thread_name(name);
}

/* An idle worker polls its queue, then sleeps between polls (std::this_thread::sleep_for),
 * then waits on a condition variable: its first sleep since it last ran an actor is its park. */
AT_EXPORT int nanosleep(const struct timespec *request, struct timespec *remaining)
{
    AT_SHIM_RESOLVE(&shim, real_nanosleep);
    if (AT_UNLIKELY(worker_thread) && !worker_idle) {
        worker_idle = 1;
        at_record(AT_EV_PARK, 0, 0, 0, 0, label(PATH_SLEEP));
    }
    return real_nanosleep(request, remaining);
}
