// Delayed sends: a ticker sends itself (tick, i) with a delay of DELAY_MS, TICKS times one
// after the other; CAF's clock thread delivers each tick. After the last it sends itself a
// tally, a message of a type of the program's own, and quits when that comes.
// Usage: delayed TICKS DELAY_MS
#include <chrono>

#include "caf/all.hpp"
#include "truth.hpp"

using namespace caf;

using tick_atom = atom_constant<atom("tick")>;

namespace ticks {
struct tally {
  int count;
};
} // namespace ticks

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ticks::tally)

static behavior ticker(event_based_actor* self, int ticks, int delay_ms) {
  auto delay = std::chrono::milliseconds(delay_ms);
  truth::sent("tick");
  self->delayed_send(self, delay, tick_atom::value, 1);
  return {
    [=](tick_atom, int i) {
      truth::handled();
      if (i == ticks) {
        truth::sent("ticks::tally");
        return self->send(self, ticks::tally{i});
      }
      truth::sent("tick");
      self->delayed_send(self, delay, tick_atom::value, i + 1);
    },
    [=](const ticks::tally&) {
      truth::handled();
      self->quit();
    },
  };
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: delayed TICKS DELAY_MS\n");
    return 2;
  }
  int ticks = static_cast<int>(truth::count_arg(argv[1], 100000));
  int delay_ms = static_cast<int>(truth::count_arg(argv[2], 10000));
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    sys.spawn(ticker, ticks, delay_ms);
    truth::spawned();
  }
  truth::print();
  return 0;
}
