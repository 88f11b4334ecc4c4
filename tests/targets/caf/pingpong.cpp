// Ping-pong between two event-based actors, in one of CAF's two styles:
//   reply    ping sends (ping, n); pong's handler returns (pong, n), which CAF sends back to
//            the sender as an ordinary message
//   request  ping requests (ping, n) and handles (pong, n) in its `then`; pong's returned value
//            is the response
// After ROUNDS round trips ping sends (stop) to pong and both quit.
// Usage: pingpong reply|request ROUNDS
#include <cstring>

#include "caf/all.hpp"
#include "truth.hpp"

using namespace caf;

using ping_atom = atom_constant<atom("ping")>;
using pong_atom = atom_constant<atom("pong")>;
using stop_atom = atom_constant<atom("stop")>;

static behavior pong(event_based_actor* self) {
  return {
    [](ping_atom, int n) {
      truth::handled();
      truth::sent("pong");
      return std::make_tuple(pong_atom::value, n);
    },
    [self](stop_atom) {
      truth::handled();
      self->quit();
    },
  };
}

static void finish(event_based_actor* self, const actor& buddy) {
  truth::sent("stop");
  self->send(buddy, stop_atom::value);
  self->quit();
}

static behavior ping_reply(event_based_actor* self, actor buddy, int rounds) {
  truth::sent("ping");
  self->send(buddy, ping_atom::value, 1);
  return {
    [=](pong_atom, int n) {
      truth::handled();
      if (n == rounds)
        return finish(self, buddy);
      truth::sent("ping");
      self->send(buddy, ping_atom::value, n + 1);
    },
  };
}

static void request_ping(event_based_actor* self, const actor& buddy, int n, int rounds) {
  truth::sent("ping");
  self->request(buddy, infinite, ping_atom::value, n).then([=](pong_atom, int got) {
    truth::handled();
    if (got == rounds)
      return finish(self, buddy);
    request_ping(self, buddy, got + 1, rounds);
  });
}

static behavior ping_request(event_based_actor* self, actor buddy, int rounds) {
  request_ping(self, buddy, 1, rounds);
  return {[](int) {}}; // never called: the responses go to the `then` handlers
}

int main(int argc, char** argv) {
  bool request = argc == 3 && std::strcmp(argv[1], "request") == 0;
  if (argc != 3 || (!request && std::strcmp(argv[1], "reply") != 0)) {
    std::fprintf(stderr, "usage: pingpong reply|request ROUNDS\n");
    return 2;
  }
  int rounds = static_cast<int>(truth::count_arg(argv[2], 10000000));
  {
    actor_system_config cfg;
    actor_system sys{cfg};
    auto buddy = sys.spawn(pong);
    if (request)
      sys.spawn(ping_request, buddy, rounds);
    else
      sys.spawn(ping_reply, buddy, rounds);
    truth::spawned(2);
  }
  truth::print();
  return 0;
}
