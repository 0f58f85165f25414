// Registration of user device buffers: buffers inside the symmetric heap reuse the heap's
// mappings; cudaMalloc'd buffers are shared through CUDA IPC among the PEs of the node.
#include "core/cuda_driver.hpp"
#include "gpu_state.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm {

const RegisteredBuffer& Runtime::register_buffer(void* ptr, size_t bytes) {
  if (!gpu_) {
    raise(Errc::unsupported, "register_buffer",
          "host-memory PEs share only their symmetric heap; allocate with Runtime::malloc instead");
  }
  GPUCOMM_CHECK_ARG(ptr != nullptr && bytes > 0, "register_buffer", "ptr", "must be a non-empty device buffer");
  GPUCOMM_CHECK_ARG(!gpu_->registrations.count(ptr), "register_buffer", "ptr", "is already registered");
  auto reg = std::make_unique<GpuState::Registration>();
  reg->buffer.local = ptr;
  reg->buffer.bytes = bytes;
  reg->buffer.peers.assign(static_cast<size_t>(size_), nullptr);
  // Collective decision: every PE must agree on where the buffer lives.
  bool in_heap = heap_->contains(ptr, bytes);
  if (auto d = bootstrap_->agree(in_heap ? "heap" : "ipc")) {
    raise_arg("register_buffer", "ptr",
              "rank " + std::to_string(d.rank) + " registers a buffer " + (in_heap ? "outside" : "inside") +
                  " the symmetric heap, this PE one " + (in_heap ? "inside" : "outside") + " it");
  }
  if (in_heap) {
    for (int r = 0; r < size_; ++r) reg->buffer.peers[static_cast<size_t>(r)] = heap_->peer_address(ptr, r);
  } else {
    reg->share = std::make_unique<heap::IpcShare>(*bootstrap_, node_of_, ptr, bytes, "register_buffer");
    for (int r = 0; r < size_; ++r) reg->buffer.peers[static_cast<size_t>(r)] = reg->share->address(r);
  }
  void* table = nullptr;
  check_cuda(cudaMalloc(&table, sizeof(void*) * static_cast<size_t>(size_)), "cudaMalloc", "registered buffer table");
  check_cuda(
      cudaMemcpy(table, reg->buffer.peers.data(), sizeof(void*) * static_cast<size_t>(size_), cudaMemcpyHostToDevice),
      "cudaMemcpy", "registered buffer table");
  reg->buffer.device_peers = static_cast<void* const*>(table);
  bootstrap_->barrier();
  auto& out = gpu_->registrations[ptr];
  out = std::move(reg);
  return out->buffer;
}

void Runtime::deregister_buffer(void* ptr) {
  if (!gpu_) raise(Errc::unsupported, "deregister_buffer", "host-memory PEs register no buffers");
  auto it = gpu_->registrations.find(ptr);
  GPUCOMM_CHECK_ARG(it != gpu_->registrations.end(), "deregister_buffer", "ptr", "is not a registered buffer");
  gpu_sync("deregister_buffer");
  bootstrap_->barrier();  // no PE still accesses the buffer
  gpu_->registrations.erase(it);
}

}  // namespace gpucomm
