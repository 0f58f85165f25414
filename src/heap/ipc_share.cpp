#include "ipc_share.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "core/cuda_driver.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::heap {
namespace {
struct Record {
  cudaIpcMemHandle_t handle;
  uint64_t offset;  // of the shared pointer from the allocation's start
  uint64_t bytes;
};
}  // namespace

IpcShare::IpcShare(bootstrap::Bootstrap& b, const std::vector<int>& node_of, void* local, size_t bytes,
                   const std::string& what) {
  const int me = b.rank(), n = b.size();
  CUdeviceptr base = 0;
  size_t alloc_bytes = 0;
  check_cu(cuda_driver().mem_get_address_range(&base, &alloc_bytes, reinterpret_cast<CUdeviceptr>(local)),
           "cuMemGetAddressRange", what + ": the pointer is not device memory allocated with cudaMalloc");
  Record mine{};
  check_cuda(cudaIpcGetMemHandle(&mine.handle, reinterpret_cast<void*>(base)), "cudaIpcGetMemHandle",
             what +
                 " (CUDA IPC shares cudaMalloc allocations; memory from cuMemCreate or cudaMallocAsync pools cannot be "
                 "shared this way: allocate it with cudaMalloc or inside the symmetric heap)");
  mine.offset = reinterpret_cast<uintptr_t>(local) - base;
  mine.bytes = bytes;
  auto all = b.allgather(std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
  addresses_.assign(static_cast<size_t>(n), nullptr);
  for (int r = 0; r < n; ++r) {
    Record rec;
    if (all[static_cast<size_t>(r)].size() != sizeof rec)
      raise(Errc::protocol, what, "malformed IPC record from rank " + std::to_string(r));
    std::memcpy(&rec, all[static_cast<size_t>(r)].data(), sizeof rec);
    if (rec.bytes != bytes) {
      raise(Errc::invalid_argument, what,
            "rank " + std::to_string(r) + " shares " + std::to_string(rec.bytes) + " bytes, this PE " +
                std::to_string(bytes) + " (the call is collective and symmetric)");
    }
    if (r == me) {
      addresses_[static_cast<size_t>(r)] = static_cast<char*>(local);
      continue;
    }
    if (node_of[static_cast<size_t>(r)] != node_of[static_cast<size_t>(me)]) continue;
    void* p = nullptr;
    cudaError_t e = cudaIpcOpenMemHandle(&p, rec.handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      GPUCOMM_LOG(warn, what << ": rank " << r << "'s memory cannot be mapped here (" << cudaGetErrorString(e)
                             << "); it is unreachable from this PE");
      continue;
    }
    opened_.push_back(p);
    addresses_[static_cast<size_t>(r)] = static_cast<char*>(p) + rec.offset;
  }
}

IpcShare::~IpcShare() {
  for (void* p : opened_) (void)cudaIpcCloseMemHandle(p);
}

}  // namespace gpucomm::heap
