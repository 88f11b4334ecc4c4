// What a CAF test program did, counted by the program itself: every message it sends (by the
// name of its first element), every message its handlers run for, and every actor it spawns.
// The last line it prints is {"ground_truth":{...}}, which tests/e2e/caf.sh holds the trace
// against.
#ifndef CAF_TESTS_TRUTH_HPP
#define CAF_TESTS_TRUTH_HPP

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace truth {

struct counts {
  std::mutex lock;
  std::map<std::string, long> sent; // by message name
  long handled = 0, actors = 0;
};

inline counts& get() {
  static counts c;
  return c;
}

// A message about to be sent (or returned from a handler as its reply).
inline void sent(const char* name) {
  std::lock_guard<std::mutex> guard{get().lock};
  get().sent[name]++;
}

// A handler runs for one message.
inline void handled() {
  std::lock_guard<std::mutex> guard{get().lock};
  get().handled++;
}

inline void spawned(long n = 1) {
  std::lock_guard<std::mutex> guard{get().lock};
  get().actors += n;
}

// Call once the actor system is gone: every actor has ended.
inline void print() {
  counts& c = get();
  long sends = 0;
  std::string names;
  for (auto& [name, n] : c.sent) {
    sends += n;
    names += (names.empty() ? "\"" : ",\"") + name + "\":" + std::to_string(n);
  }
  std::printf("{\"ground_truth\":{\"actors\":%ld,\"sends\":%ld,\"handled\":%ld,\"msgs\":{%s}}}\n",
              c.actors, sends, c.handled, names.c_str());
}

// Parses a count argument in [1, max]; exits with a usage error otherwise.
inline long count_arg(const char* s, long max) {
  char* end;
  long v = std::strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 1 || v > max) {
    std::fprintf(stderr, "bad count: %s\n", s);
    std::exit(2);
  }
  return v;
}

} // namespace truth

#endif
