// Text of a failure recorded by device code (a wait that timed out, a bad argument).
#include <cstdio>
#include <string>

#include "gpu_state.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm {

const char* device_op_name(DeviceOp op) {
  switch (op) {
    case DeviceOp::none: return "device operation";
    case DeviceOp::put: return "put";
    case DeviceOp::get: return "get";
    case DeviceOp::p: return "p";
    case DeviceOp::g: return "g";
    case DeviceOp::put_signal: return "put_signal";
    case DeviceOp::signal: return "signal_op";
    case DeviceOp::signal_wait_until: return "signal_wait_until";
    case DeviceOp::wait_until: return "wait_until";
    case DeviceOp::test: return "test";
    case DeviceOp::atomic: return "atomic";
    case DeviceOp::barrier_master: return "barrier_master";
    case DeviceOp::barrier_dissemination: return "barrier_dissemination";
    case DeviceOp::ptr: return "ptr";
    case DeviceOp::copy: return "copy";
    case DeviceOp::proxy_post: return "posting to the proxy queue";
    case DeviceOp::proxy_wait: return "waiting for the proxy";
    case DeviceOp::quiet: return "quiet";
  }
  return "device operation";
}

namespace detail {
namespace {
std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

std::string describe_device_failure(const DeviceDiag& d, uint64_t heap_bytes) {
  std::string where = "rank " + std::to_string(d.rank) + ", block (" + std::to_string(d.block[0]) + "," +
                      std::to_string(d.block[1]) + "," + std::to_string(d.block[2]) + ") thread (" + std::to_string(d.thread[0]) +
                      "," + std::to_string(d.thread[1]) + "," + std::to_string(d.thread[2]) + "): ";
  std::string addr = d.in_heap ? "heap+" + hex(d.offset) : "address " + hex(d.offset);
  std::string op = device_op_name(d.op);
  switch (d.fault) {
    case DeviceFault::timeout: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(d.elapsed_ns) / 1e9);
      if (d.queue != 0) {
        // A wait on a proxy queue: for space (consumed) or for completion (completed).
        std::string s = where + op + (d.peer >= 0 ? " to PE " + std::to_string(d.peer) : std::string()) + ": proxy queue " +
                        std::to_string(d.queue - 1) + (d.op == DeviceOp::proxy_post ? " had no space: the agent consumed " : ": the agent completed ") +
                        std::to_string(d.seen) + " entries, waiting for " + std::to_string(d.expected) + "; timed out after " + secs +
                        " s (GPUCOMM_TIMEOUT sets the limit; is the proxy running?)";
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
      if (d.cmp == Cmp::lt)
        return where + op + ": PE " + std::to_string(static_cast<int64_t>(d.expected)) + " is outside 0.." +
               std::to_string(static_cast<int64_t>(d.seen) - 1);
      if (d.cmp == Cmp::le)
        return where + op + ": " + addr + " (+" + std::to_string(d.expected) + " bytes) is not inside the symmetric heap of " +
               std::to_string(d.seen ? d.seen : heap_bytes) + " bytes";
      return where + op + ": " + addr + " is not aligned to " + std::to_string(d.seen) + " bytes";
    case DeviceFault::proxy:
      return where + op + (d.peer >= 0 ? " to PE " + std::to_string(d.peer) : std::string()) + ": proxy queue " +
             std::to_string(d.queue - 1) + " failed at ticket " + std::to_string(d.seen) + ": " +
             proxy::fault_name(static_cast<proxy::QueueFault>(d.expected)) + " (the proxy's log says more)";
    case DeviceFault::none: break;
  }
  return where + op + ": unknown device failure";
}

}  // namespace detail
}  // namespace gpucomm
