#pragma once
// Transport selection and the interface of remote (network) transports.
//
// Routing: a one-sided operation to a peer goes `direct` (loads/stores or SM copies into the
// peer's mapped heap) when the peer is reachable that way, through a proxy agent otherwise.
// GPUCOMM_TRANSPORT (and RuntimeOptions::transport) forces one path for every peer, so the
// models can be compared on one machine: direct, proxy-cpu (CPU proxy threads, copy engine or
// CPU copies), proxy-gpu (GPU service block, SM copies) or ucx (UCX, also between PEs of one
// node, which then act as if they were on different nodes).
//
// Remote transports live in separate libraries (UCX: libgpucomm_ucx) so that the core library
// does not depend on them: open_remote() finds a registered factory or loads the library.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ops.hpp"

namespace gpucomm::bootstrap {
class Bootstrap;
}

namespace gpucomm::transport {

// The device handle carries it (DeviceHandle::transport).
using Kind = TransportKind;

const char* kind_name(Kind k);
// Parses "auto", "direct", "proxy-cpu", "proxy-gpu", "ucx"; raises Errc::invalid_argument naming
// `what` (the variable or option) otherwise.
Kind parse_kind(const std::string& text, const char* what);
// GPUCOMM_TRANSPORT, or Kind::automatic when unset.
Kind kind_from_env();

// Completion of a non-blocking remote operation: the transport sets *done (release) once the
// operation is complete at the target (puts, signals, atomics) or locally (gets).
struct Completion {
  uint64_t* done = nullptr;  // set to 1 by the transport; may be null (fire and forget)
};

// What a remote transport needs from the runtime.
struct RemoteContext {
  bootstrap::Bootstrap* bootstrap = nullptr;  // collective exchange of addresses and keys
  int rank = 0;
  int size = 1;
  void* heap_base = nullptr;  // this PE's symmetric heap (user part), registered for remote access
  size_t heap_bytes = 0;
  bool heap_on_device = false;   // GPU PE: the heap is device memory
  std::vector<bool> remote_pes;  // which PEs this transport must reach
};

// One-sided operations on other PEs' symmetric heaps, addressed by heap offset. Not thread-safe:
// one owner thread (a proxy thread or the runtime's host path) calls everything, including
// progress(). Errors raise gpucomm::Error naming the operation and the PE.
// - Targets must progress: over transports that emulate RMA in software (UCX over TCP) an
//   operation completes only while its target calls progress() (or flush()).
// - Sources of puts, `result` words and Completion::done words must stay valid until the
//   operation completed, or until the transport is destroyed (an operation to a failed PE may
//   still be completed or cancelled while it closes).
// - Opening and destruction are collective: every PE opens and destroys its instances in the
//   same order.
class Remote {
 public:
  virtual ~Remote() = default;
  virtual const char* name() const = 0;
  virtual void put(int pe, uint64_t dst_offset, const void* src, size_t bytes, Completion c) = 0;
  virtual void get(void* dst, int pe, uint64_t src_offset, size_t bytes, Completion c) = 0;
  // AtomicOp `op` on a 4- or 8-byte word; stores the old value at `result` when non-null.
  virtual void atomic(int pe, uint64_t offset, AtomicOp op, unsigned width, uint64_t operand, uint64_t compare,
                      uint64_t* result, Completion c) = 0;
  // Later operations to `pe` are performed at the target after earlier ones (data before signal).
  virtual void fence(int pe) = 0;
  // Blocks (with GPUCOMM_TIMEOUT) until every earlier operation is complete.
  virtual void flush() = 0;
  // Advances outstanding operations; returns the number completed since the last call.
  virtual size_t progress() = 0;
};

using RemoteFactory = std::function<std::unique_ptr<Remote>(const RemoteContext&)>;
// Called by a transport library when it is loaded.
void register_remote(const std::string& name, RemoteFactory f);
// Collective over ctx.bootstrap: the named transport ("ucx"), loading lib<gpucomm_name>.so from
// beside libgpucomm when no factory is registered yet. Raises Errc::unsupported with the reason
// when the library or its dependencies are missing.
std::unique_ptr<Remote> open_remote(const std::string& name, const RemoteContext& ctx);

}  // namespace gpucomm::transport
