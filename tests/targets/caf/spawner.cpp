// An actor that spawns children that exit: told (go) by main, the parent spawns CHILDREN
// children in turn, each given (job, i); a child answers (child_done, i) (an atom of the full
// ten characters) and quits. When all have answered, the parent quits. Done TIMES over, each
// with a new parent.
// Usage: spawner CHILDREN TIMES
#include "caf/all.hpp"
#include "truth.hpp"

using namespace caf;

using go_atom = atom_constant<atom("go")>;
using job_atom = atom_constant<atom("job")>;
using done_atom = atom_constant<atom("child_done")>;

static behavior child(event_based_actor* self) {
  return {
    [self](job_atom, int i) {
      truth::handled();
      truth::sent("child_done");
      self->quit();
      return std::make_tuple(done_atom::value, i);
    },
  };
}

static behavior parent(event_based_actor* self, int children) {
  auto answered = std::make_shared<int>(0);
  return {
    [=](go_atom) {
      truth::handled();
      for (int i = 0; i < children; i++) {
        auto c = self->spawn(child);
        truth::spawned();
        truth::sent("job");
        self->send(c, job_atom::value, i);
      }
    },
    [=](done_atom, int) {
      truth::handled();
      if (++*answered == children)
        self->quit();
    },
  };
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: spawner CHILDREN TIMES\n");
    return 2;
  }
  int children = static_cast<int>(truth::count_arg(argv[1], 100000));
  long times = truth::count_arg(argv[2], 100000);
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    for (long t = 0; t < times; t++) {
      auto p = sys.spawn(parent, children);
      truth::spawned();
      truth::sent("go");
      anon_send(p, go_atom::value);
    }
  }
  truth::print();
  return 0;
}
