// The layout facts shim/caf.c reads CAF's objects by, computed here from CAF's own headers
// (offsetof, and vtable slots found by the symbol each holds), one "NAME VALUE" line each, for
// tests/e2e/caf.sh to compare with the constants of the same names in the shim.
// The members the shim reads in CAF's scheduler are private: this file alone sees them public.
#include <bits/stdc++.h>
#include <dlfcn.h>

#define private public
#define protected public
#include "caf/all.hpp"
#include "caf/policy/work_stealing.hpp"
#include "caf/scheduler/coordinator.hpp"
#include "caf/scheduler/worker.hpp"
#undef private
#undef protected

using namespace caf;
using worker_t = scheduler::worker<policy::work_stealing>;
using coordinator_t = scheduler::coordinator<policy::work_stealing>;

#pragma GCC diagnostic ignored "-Winvalid-offsetof"

static long offset_of(const void* base, const void* member) {
  return static_cast<const char*>(member) - static_cast<const char*>(base);
}

// The slot of the object's vtable whose function's symbol ends with `suffix`, or -1.
static long slot_of(const void* object, const char* suffix, long slots) {
  void* const* vtable = *static_cast<void* const* const*>(object);
  for (long i = 0; i < slots; i++) {
    Dl_info info;
    if (dladdr(vtable[i], &info) && info.dli_sname) {
      std::string name = info.dli_sname;
      if (name.size() >= std::strlen(suffix)
          && name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        return i;
    }
  }
  return -1;
}

int main() {
  actor_system_config cfg;
  actor_system sys{cfg};
  actor a = sys.spawn([]() -> behavior { return {[](int) {}}; });
  auto* self = static_cast<scheduled_actor*>(actor_cast<abstract_actor*>(a));
  auto* ctrl = actor_cast<strong_actor_ptr>(a).get();
  auto element = make_mailbox_element(nullptr, make_message_id(), {}, 1);
  mailbox_element* e = element.get();
  std::printf("CTRL_SIZE %ld\n", offset_of(ctrl, self));
  std::printf("CTRL_AID %ld\n", offset_of(ctrl, &ctrl->aid));
  std::printf("CTRL_NID %ld\n", offset_of(ctrl, &ctrl->nid));
  std::printf("RESUMABLE_OFFSET %ld\n", offset_of(self, static_cast<resumable*>(self)));
  std::printf("ELEM_VIEW %ld\n", offset_of(e, static_cast<message_view*>(e)));
  std::printf("ELEM_SENDER %ld\n", offset_of(e, &e->sender));
  std::printf("ELEM_MID %ld\n", offset_of(e, &e->mid));
  std::printf("WORKER_ID %zu\n", offsetof(worker_t, id_));
  std::printf("COORD_WORKERS %zu\n", offsetof(coordinator_t, num_workers_));
  std::printf("COORD_NEXT %zu\n", offsetof(coordinator_t, data_)
                                      + offsetof(policy::work_stealing::coordinator_data,
                                                 next_worker));
  std::printf("VIEW_CONTENT %ld\n", slot_of(static_cast<message_view*>(e), "7contentEv", 6));
  std::printf("TUPLE_SIZE %ld\n", slot_of(&e->content(), "4sizeEv", 14));
  std::printf("TUPLE_TYPE %ld\n", slot_of(&e->content(), "4typeEm", 14));
  std::printf("TUPLE_GET %ld\n", slot_of(&e->content(), "3getEm", 14));
  std::printf("ACTOR_NAME %ld\n", slot_of(self, "4nameEv", 30));
  std::printf("RESUMABLE_RESUME %ld\n",
              slot_of(static_cast<resumable*>(self), "6resumeEPNS_14execution_unitEm", 6));
  std::printf("ATOM_TYPE_NR %u\n", static_cast<unsigned>(type_nr<atom_value>::value));
  std::printf("CAF_TYPE_NRS %zu\n", type_nrs);
  std::printf("MID_RESPONSE 0x%llXull\n",
              static_cast<unsigned long long>(message_id::response_flag_mask));
  std::printf("MID_REQUEST_ID 0x%016llXull\n",
              static_cast<unsigned long long>(message_id::request_id_mask));
  anon_send_exit(a, exit_reason::user_shutdown);
  return 0;
}
