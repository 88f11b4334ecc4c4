// Typed actors: a typed calculator answers (add, a, b) with the sum, an int; a typed client
// told (go) by main, requests N additions one after the other, then sends (stop). The
// calculator's responses are plain ints, so their name is the type's.
// Usage: typed N
#include "caf/all.hpp"
#include "truth.hpp"

using namespace caf;

using add_atom = atom_constant<atom("add")>;
using stop_atom = atom_constant<atom("stop")>;
using go_atom = atom_constant<atom("go")>;

using calculator_actor =
  typed_actor<replies_to<add_atom, int, int>::with<int>, reacts_to<stop_atom>>;
using client_actor = typed_actor<reacts_to<go_atom>>;

static calculator_actor::behavior_type calculator(calculator_actor::pointer self) {
  return {
    [](add_atom, int a, int b) {
      truth::handled();
      truth::sent("@i32");
      return a + b;
    },
    [self](stop_atom) {
      truth::handled();
      self->quit();
    },
  };
}

static void add_next(client_actor::pointer self, const calculator_actor& calc, int i, int n) {
  truth::sent("add");
  self->request(calc, infinite, add_atom::value, i, 1).then([=](int sum) {
    truth::handled();
    if (sum <= n)
      return add_next(self, calc, sum, n);
    truth::sent("stop");
    self->send(calc, stop_atom::value);
    self->quit();
  });
}

static client_actor::behavior_type client(client_actor::pointer self, calculator_actor calc,
                                          int n) {
  return {
    [=](go_atom) {
      truth::handled();
      add_next(self, calc, 1, n);
    },
  };
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: typed N\n");
    return 2;
  }
  int n = static_cast<int>(truth::count_arg(argv[1], 10000000));
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    auto calc = sys.spawn(calculator);
    auto c = sys.spawn(client, calc, n);
    truth::spawned(2);
    truth::sent("go");
    anon_send(c, go_atom::value);
  }
  truth::print();
  return 0;
}
