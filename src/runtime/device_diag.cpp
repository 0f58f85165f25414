// Text of a failure recorded by device code (a wait that timed out, a bad argument).
#include <cstdio>
#include <string>

#include "gpu_state.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm {

namespace detail {

std::string describe_device_failure(const DeviceDiag& d, uint64_t heap_bytes) {
  std::string where = "rank " + std::to_string(d.rank) + ", block (" + std::to_string(d.block[0]) + "," +
                      std::to_string(d.block[1]) + "," + std::to_string(d.block[2]) + ") thread (" +
                      std::to_string(d.thread[0]) + "," + std::to_string(d.thread[1]) + "," +
                      std::to_string(d.thread[2]) + "): ";
  std::string addr = d.in_heap ? "heap+" + hex(d.offset) : "address " + hex(d.offset);
  std::string op = device_op_name(d.op);
  switch (d.fault) {
    case DeviceFault::timeout: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(d.elapsed_ns) / 1e9);
      if (d.queue != 0) {
        // A wait on a proxy queue: for space (consumed) or for completion (completed).
        std::string s =
            where + op + (d.peer >= 0 ? " to PE " + std::to_string(d.peer) : std::string()) + ": proxy queue " +
            std::to_string(d.queue - 1) +
            (d.op == DeviceOp::proxy_post ? " had no space: the agent consumed " : ": the agent completed ") +
            std::to_string(d.seen) + " entries, waiting for " + std::to_string(d.expected) + "; timed out after " +
            secs + " s (GPUCOMM_TIMEOUT sets the limit; is the proxy running?)";
        return s;
      }
      std::string s = where + op + " on " + addr;
      if (d.peer >= 0) s += " waiting for PE " + std::to_string(d.peer);
      s += ": expected value " + std::string(cmp_name(d.cmp)) + " " + std::to_string(d.expected) + ", last seen " +
           std::to_string(d.seen) + "; timed out after " + secs + " s (GPUCOMM_TIMEOUT sets the limit)";
      return s;
    }
    case DeviceFault::unreachable:
      return where + op + " to PE " + std::to_string(d.peer) + " (" + addr + "): PE " + std::to_string(d.peer) +
             " is not reachable from this GPU (another node, or no peer access)";
    case DeviceFault::bad_argument:
      if (d.cmp == Cmp::lt) {
        return where + op + ": PE " + std::to_string(static_cast<int64_t>(d.expected)) + " is outside 0.." +
               std::to_string(static_cast<int64_t>(d.seen) - 1);
      }
      if (d.cmp == Cmp::le) {
        return where + op + ": " + addr + " (+" + std::to_string(d.expected) +
               " bytes) is not inside the symmetric heap of " + std::to_string(d.seen ? d.seen : heap_bytes) + " bytes";
      }
      if (d.cmp == Cmp::ne) {
        // A check between PEs (the collectives' argument signatures, alltoallv's counts): the layer's
        // own record (its check_device()) names the fields.
        return where + op + ": the arguments differ from PE " + std::to_string(d.peer) + "'s (" +
               std::to_string(d.expected) + " here, " + std::to_string(d.seen) + " there)";
      }
      return where + op + ": " + addr + " is not aligned to " + std::to_string(d.seen) + " bytes";
    case DeviceFault::proxy:
      return where + op + (d.peer >= 0 ? " to PE " + std::to_string(d.peer) : std::string()) + ": proxy queue " +
             std::to_string(d.queue - 1) + " failed at ticket " + std::to_string(d.seen) + ": " +
             proxy::fault_name(static_cast<proxy::QueueFault>(d.expected)) + " (the proxy's log says more)";
    case DeviceFault::bad_handle: {
      static const char* const fields[] = {"magic", "version", "size"};
      const char* field = d.offset < 3 ? fields[d.offset] : "field";
      return where + op + ": the handle's " + field + " is " + std::to_string(d.seen) + ", these headers expect " +
             std::to_string(d.expected) +
             " (a kernel built against other gpucomm headers than the library's, or a handle not made by gpucomm)";
    }
    case DeviceFault::aborted: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(d.elapsed_ns) / 1e9);
      // The job-state word holds the first failed PE + 1, or 0xffffffff when no PE failed first.
      const std::string first = d.seen == 0xfffffffeull ? std::string("the launcher is gone")
                                                        : "PE " + std::to_string(d.seen) + " failed first";
      return where + op + (d.peer >= 0 ? " waiting for PE " + std::to_string(d.peer) : std::string()) + " on " + addr +
             ": left after " + secs + " s because the job failed (" + first + ")";
    }
    case DeviceFault::none:
      break;
  }
  return where + op + ": unknown device failure";
}

}  // namespace detail
}  // namespace gpucomm
