// Scatter-gather over a pool of workers: in each of ROUNDS rounds the master requests
// (work, i) from each of WORKERS workers and gathers their (result, i) responses; the next
// round starts when all have come back. Then the master sends (stop) to each worker and all
// quit. The master is a stateful actor whose state names it "master".
// Usage: fanout WORKERS ROUNDS
#include <vector>

#include "caf/all.hpp"
#include "truth.hpp"

using namespace caf;

using work_atom = atom_constant<atom("work")>;
using result_atom = atom_constant<atom("result")>;
using stop_atom = atom_constant<atom("stop")>;

static behavior worker(event_based_actor* self) {
  return {
    [](work_atom, int i) {
      truth::handled();
      truth::sent("result");
      return std::make_tuple(result_atom::value, i * 2);
    },
    [self](stop_atom) {
      truth::handled();
      self->quit();
    },
  };
}

struct master_state {
  std::vector<actor> workers;
  int round = 0, rounds = 0;
  size_t gathered = 0;
  static inline const char* name = "master";
};

static void scatter(stateful_actor<master_state>* self) {
  self->state.gathered = 0;
  for (size_t i = 0; i < self->state.workers.size(); i++) {
    truth::sent("work");
    self->request(self->state.workers[i], infinite, work_atom::value, static_cast<int>(i))
      .then([self](result_atom, int) {
        truth::handled();
        auto& st = self->state;
        if (++st.gathered < st.workers.size())
          return;
        if (++st.round < st.rounds)
          return scatter(self);
        for (auto& w : st.workers) {
          truth::sent("stop");
          self->send(w, stop_atom::value);
        }
        self->quit();
      });
  }
}

static behavior master(stateful_actor<master_state>* self, int workers, int rounds) {
  self->state.rounds = rounds;
  for (int i = 0; i < workers; i++)
    self->state.workers.push_back(self->spawn(worker));
  truth::spawned(workers);
  scatter(self);
  return {[](int) {}}; // never called: the results go to the `then` handlers
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fanout WORKERS ROUNDS\n");
    return 2;
  }
  int workers = static_cast<int>(truth::count_arg(argv[1], 1000));
  int rounds = static_cast<int>(truth::count_arg(argv[2], 1000000));
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    sys.spawn(master, workers, rounds);
    truth::spawned();
  }
  truth::print();
  return 0;
}
