/* The event kinds every shim records and the decoder names: one list, expanded into the enum
 * and the name table by whoever includes it, so the recorder and the decoder cannot disagree. */
#ifndef AT_EVENTS_H
#define AT_EVENTS_H

/* X(ENUM_SUFFIX, "json name"). Values are stable: they are written into trace files, so new
 * kinds are appended, never inserted. Kind 0 is reserved: a slot whose kind is 0 was never
 * committed (see at_record.h). */
#define AT_EVENT_LIST(X)                                                                           \
    X(SPAWN, "spawn")                                                                              \
    X(EXIT, "exit")                                                                                \
    X(SEND, "send")                                                                                \
    X(RECV, "recv")                                                                                \
    X(STEP_BEGIN, "step_begin")                                                                    \
    X(STEP_END, "step_end")                                                                        \
    X(SCHEDULE, "schedule")                                                                        \
    X(PARK, "park")                                                                                \
    X(UNPARK, "unpark")                                                                            \
    X(YIELD, "yield")

enum at_event_kind {
    AT_EV_NONE = 0,
#define AT_EV_ENUM(name, str) AT_EV_##name,
    AT_EVENT_LIST(AT_EV_ENUM)
#undef AT_EV_ENUM
        AT_EV_BUILTIN_END,
    /* Kinds at_event_register() hands out start here and end at 255. */
    AT_EV_FIRST_REGISTERED = 64,
};

#endif
