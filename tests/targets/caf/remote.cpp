// CAF's remoting (libcaf_io: BASP over tcp) between two processes, each traced to its own file:
//   remote server PORTFILE N  publishes a calculator on an ephemeral port of 127.0.0.1 (written
//                             to PORTFILE), answers N (add, i, i) with (result, 2i), then quits
//   remote client PORTFILE N  connects to it and asks the N additions one after the other
// Each first spawns IDLE actors that quit at once, so that the ids the other process's actors
// have are ids of named actors here too: a remote actor's id must not take a local name.
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "truth.hpp"

using namespace caf;

using add_atom = atom_constant<atom("add")>;
using result_atom = atom_constant<atom("result")>;

static constexpr int IDLE = 24;
static std::atomic<int> answered{0};

static void spawn_idle(actor_system& sys) {
  for (int i = 0; i < IDLE; i++) {
    truth::spawned();
    sys.spawn([](event_based_actor* self) -> behavior {
      self->quit();
      return {};
    });
  }
}

static behavior calculator(event_based_actor*) {
  return {
    [](add_atom, int a, int b) {
      truth::handled();
      truth::sent("result");
      answered++;
      return std::make_tuple(result_atom::value, a + b);
    },
  };
}

static void ask(event_based_actor* self, const actor& calc, int i, int n) {
  truth::sent("add");
  self->request(calc, infinite, add_atom::value, i, i).then([=](result_atom, int sum) {
    truth::handled();
    if (sum != 2 * i)
      std::fprintf(stderr, "remote: %d + %d gave %d\n", i, i, sum);
    if (i + 1 < n)
      ask(self, calc, i + 1, n);
  });
}

static int server(actor_system& sys, const char* port_file, int n) {
  truth::spawned();
  actor calc = sys.spawn(calculator);
  expected<uint16_t> port = sys.middleman().publish(calc, 0, "127.0.0.1");
  if (!port)
    return 1;
  std::ofstream(port_file) << *port << "\n";
  while (answered < n)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // the last result is on its way: let it leave before the calculator goes
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  anon_send_exit(calc, exit_reason::user_shutdown);
  return 0;
}

static int client(actor_system& sys, const char* port_file, int n) {
  int port = 0;
  std::ifstream(port_file) >> port;
  expected<actor> calc = sys.middleman().remote_actor("127.0.0.1", static_cast<uint16_t>(port));
  if (!calc)
    return 1;
  truth::spawned();
  sys.spawn([=](event_based_actor* self) { ask(self, *calc, 0, n); });
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "server") != 0 && std::strcmp(argv[1], "client") != 0)) {
    std::fprintf(stderr, "usage: remote server|client PORTFILE N\n");
    return 2;
  }
  int status;
  {
    actor_system_config cfg;
    cfg.load<io::middleman>();
    actor_system sys{cfg};
    spawn_idle(sys);
    int n = std::atoi(argv[3]);
    status = argv[1][0] == 's' ? server(sys, argv[2], n) : client(sys, argv[2], n);
  }
  truth::print();
  return status;
}
