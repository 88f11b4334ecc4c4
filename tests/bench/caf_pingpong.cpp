// CAF ping-pong between two event-based actors (send, and pong's handler returning the reply),
// for tests/bench/run.sh to run untraced and traced. After WARMUP untimed round trips, times
// ROUNDS more and prints two figures: round trips per second, and the CPU time of the whole
// process (every thread: CAF's workers and the tracer's writer) per round trip in nanoseconds.
// Usage: caf_pingpong ROUNDS [WARMUP]   (WARMUP defaults to ROUNDS / 5)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "caf/all.hpp"

using namespace caf;

using ping_atom = atom_constant<atom("ping")>;
using pong_atom = atom_constant<atom("pong")>;

static double cpu_seconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct clock_marks {
  std::chrono::steady_clock::time_point start, end;
  double cpu_start = 0, cpu_end = 0;
};

static behavior pong(event_based_actor* self) {
  return {
    [](ping_atom, long n) { return std::make_tuple(pong_atom::value, n); },
    [self](ping_atom) { self->quit(); },
  };
}

static behavior ping(event_based_actor* self, actor buddy, long warmup, long rounds,
                     clock_marks* marks) {
  self->send(buddy, ping_atom::value, 1L);
  return {
    [=](pong_atom, long n) {
      if (n == warmup) {
        marks->start = std::chrono::steady_clock::now();
        marks->cpu_start = cpu_seconds();
      }
      if (n == warmup + rounds) {
        marks->end = std::chrono::steady_clock::now();
        marks->cpu_end = cpu_seconds();
        self->send(buddy, ping_atom::value);
        return self->quit();
      }
      self->send(buddy, ping_atom::value, n + 1);
    },
  };
}

int main(int argc, char** argv) {
  long rounds = argc > 1 ? std::atol(argv[1]) : 0;
  long warmup = argc > 2 ? std::atol(argv[2]) : rounds / 5;
  if (argc < 2 || argc > 3 || rounds < 1 || warmup < 1) {
    std::fprintf(stderr, "usage: caf_pingpong ROUNDS [WARMUP]\n");
    return 2;
  }
  clock_marks marks;
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    sys.spawn(ping, sys.spawn(pong), warmup, rounds, &marks);
  }
  double seconds = std::chrono::duration<double>(marks.end - marks.start).count();
  std::printf("%.0f %.1f\n", static_cast<double>(rounds) / seconds,
              (marks.cpu_end - marks.cpu_start) * 1e9 / static_cast<double>(rounds));
  return 0;
}
