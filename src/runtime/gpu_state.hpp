#pragma once
// What a GPU PE's runtime holds besides its heap: the streams of the host-side operations, the
// host-mapped diagnostic record and result slots, the device handle, registered buffers.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>

#include "gpucomm/runtime/runtime.hpp"
#include "heap/ipc_share.hpp"

namespace gpucomm {

struct Runtime::GpuState {
  cudaStream_t stream = nullptr;  // host-side operations, in order
  cudaStream_t poll = nullptr;    // reads of local words while the host waits
  DeviceDiag* diag_host = nullptr;
  DeviceDiag* diag_dev = nullptr;
  uint64_t* result_host = nullptr;  // pinned, mapped: atomic results and polled words
  uint64_t* result_dev = nullptr;
  uint32_t* job_state_host = nullptr;  // pinned, mapped: the handle's job-state word
  uint32_t* job_state_dev = nullptr;
  DeviceHandle handle{};
  struct Registration {
    RegisteredBuffer buffer;
    std::unique_ptr<heap::IpcShare> share;  // null for buffers inside the heap
    ~Registration() {
      if (buffer.device_peers) (void)cudaFree(const_cast<void**>(buffer.device_peers));
    }
  };
  std::map<void*, std::unique_ptr<Registration>> registrations;
  ~GpuState();
};

namespace detail {
// Formats a recorded device failure (rank, operation, address, values, block and thread).
std::string describe_device_failure(const DeviceDiag& d, uint64_t heap_bytes);
}  // namespace detail

}  // namespace gpucomm
