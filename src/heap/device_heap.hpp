#pragma once
// The GPU symmetric heap: each GPU PE owns one region of device memory (a control block with
// the device barrier flags, then the user part) and maps the regions of the other PEs of its
// node into its address space, so kernels and copies reach them with plain pointers.
//
// Mapping (GPUCOMM_HEAP_MAPPING): `vmm` creates the region with cuMemCreate (POSIX file
// descriptor handle), exports it as an fd, passes the fds over Unix sockets (exchange_fds) and
// maps the peers' with cuMemImportFromShareableHandle + cuMemMap + cuMemSetAccess; `ipc` uses
// cudaMalloc and cudaIpcOpenMemHandle; `auto` picks vmm when every PE supports it.
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/heap/symmetric_heap.hpp"

namespace gpucomm::heap {

class IpcShare;

class DeviceHeap final : public SymmetricHeap {
 public:
  // Collective over the world. `device` is this PE's (current) CUDA device. Each region holds
  // `control_bytes` (the runtime's per-PE control block) before the `user_bytes` of the heap.
  DeviceHeap(bootstrap::Bootstrap& b, const std::vector<int>& node_of, int device, size_t control_bytes,
             size_t user_bytes, const std::string& job_tag, const std::string& mapping);
  ~DeviceHeap() override;
  MemoryKind kind() const override { return MemoryKind::device; }

  const std::string& mapping() const { return mapping_; }  // "vmm" or "ipc"
  // Device array [num_pes] of the peers' user parts as mapped here (nullptr: unreachable).
  char* const* device_peer_bases() const { return device_peer_bases_; }
  size_t region_bytes() const { return region_bytes_; }

 private:
  bool create_vmm(size_t bytes, std::string* why);  // this PE's region and its exported fd
  void map_vmm(bootstrap::Bootstrap& b, const std::vector<int>& local, const std::vector<size_t>& sizes,
               const std::string& job_tag);
  void map_ipc(bootstrap::Bootstrap& b, const std::vector<int>& node_of);
  void release();  // unmaps and frees what was set up (destructor and failed construction)

  int device_ = 0;
  size_t control_bytes_ = 0;
  std::string mapping_;
  size_t region_bytes_ = 0;
  char* own_region_ = nullptr;
  // vmm: one reservation + mapping per reachable PE (own included) and this PE's handle
  struct VmmMapping {
    uintptr_t va = 0;
    size_t bytes = 0;
    unsigned long long handle = 0;
  };
  std::vector<VmmMapping> vmm_;
  unsigned long long own_handle_ = 0;
  int own_fd_ = -1;
  std::unique_ptr<IpcShare> ipc_;
  char** device_peer_bases_ = nullptr;
};

}  // namespace gpucomm::heap
