// The algorithms instantiated for host-memory PEs (every type, reduction and algorithm).
#include "host_run.hpp"

#include "gpucomm/collectives/dispatch.hpp"
#include "host_backend.hpp"

namespace gpucomm::coll::detail {

void run_on_host(Runtime& rt, const CollHandle& h, const Call& call, int64_t timeout_ms) {
  for (uint32_t c = 0; c < call.channels; ++c) {
    HostBackend b(rt, h, call, c, timeout_ms);
    run_call(b, call, h);
  }
}

}  // namespace gpucomm::coll::detail
