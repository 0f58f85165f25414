#pragma once
// Sharing device memory allocated with cudaMalloc through CUDA IPC: every PE exports a handle
// of its allocation, the handles travel through the bootstrap all-gather, and each PE opens the
// handles of the PEs on its node. The fallback of the GPU heap and the path of registered buffers.
#include <string>
#include <vector>

#include "gpucomm/bootstrap/bootstrap.hpp"

namespace gpucomm::heap {

class IpcShare {
 public:
  // Collective over the world. `local` points anywhere inside a cudaMalloc allocation (the
  // offset from the allocation's start is carried along); `bytes` must be the same on every PE.
  IpcShare(bootstrap::Bootstrap& b, const std::vector<int>& node_of, void* local, size_t bytes,
           const std::string& what);
  ~IpcShare();
  IpcShare(const IpcShare&) = delete;
  IpcShare& operator=(const IpcShare&) = delete;
  // `pe`'s memory as mapped here (this PE's own pointer for itself), nullptr when not reachable.
  char* address(int pe) const { return addresses_[static_cast<size_t>(pe)]; }
  const std::vector<char*>& addresses() const { return addresses_; }

 private:
  std::vector<char*> addresses_;
  std::vector<void*> opened_;  // bases returned by cudaIpcOpenMemHandle, closed on destruction
};

}  // namespace gpucomm::heap
