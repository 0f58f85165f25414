#include <algorithm>

#include "gpu_kernels.hpp"
#include "gpucomm/base/load_kernels.hpp"
#include "gpucomm/device/gpucomm_device.cuh"

namespace gpucomm::detail {
namespace {

constexpr int kCopyThreads = 512;
constexpr size_t kBytesPerBlock = size_t(256) << 10;
constexpr int kMaxCopyBlocks = 32;

__global__ void __launch_bounds__(kCopyThreads) copy_kernel(char* dst, const char* src, size_t bytes) {
  // 16-byte aligned chunks per block keep every block's vectors aligned like the whole copy.
  size_t per = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~size_t(15);
  size_t begin = static_cast<size_t>(blockIdx.x) * per;
  if (begin >= bytes) return;
  size_t len = bytes - begin < per ? bytes - begin : per;
  detail::copy(coop::Block{}, dst + begin, src + begin, len);
}

// Every kernel that follows earlier stream work (copies of other kernels or the copy engine, the
// host's operations) starts with a system-scope fence: stream order completes that work before the
// kernel starts, and the fence puts it ahead of what the kernel publishes next.
__global__ void signal_kernel(DeviceHandle h, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  mem::fence<mem::kSystem>(mem::seq_cst);
  device::signal(h, sig, value, op, pe);
}

__global__ void wait_kernel(DeviceHandle h, uint64_t* ivar, Cmp cmp, uint64_t value) {
  device::wait_until(coop::Thread{}, h, ivar, cmp, value);
}

__global__ void barrier_kernel(DeviceHandle h, TeamHandle team) {
  mem::fence<mem::kSystem>(mem::seq_cst);
  proxy::quiet_all_queues(h);  // earlier kernels' queued entries too (stream order)
  if (team.slot == 0 && (h.flags & kHandleSetSignalsOnly)) {
    device::barrier_master(coop::Thread{}, h);
  } else {
    device::barrier(coop::Thread{}, h, team);
  }
}

template <class T>
__device__ T apply_atomic(const DeviceHandle& h, AtomicOp op, T* dst, T operand, T compare, int pe) {
  return detail::device_atomic<mem::kSystem>(h, dst, op, operand, compare, pe, op != AtomicOp::set);
}

__global__ void atomic_kernel(DeviceHandle h, AtomicOp op, unsigned width, void* dst, uint64_t operand,
                              uint64_t compare, int pe, uint64_t* result) {
  mem::fence<mem::kSystem>(mem::seq_cst);  // host atomics are ordered after the PE's earlier operations
  uint64_t old;
  if (width == 4) {
    old = apply_atomic<uint32_t>(h, op, static_cast<uint32_t*>(dst), static_cast<uint32_t>(operand),
                                 static_cast<uint32_t>(compare), pe);
  } else {
    old = apply_atomic<uint64_t>(h, op, static_cast<uint64_t*>(dst), operand, compare, pe);
  }
  // The host reads the result after the stream synchronized.
  mem::store<mem::kSystem>(result, old, mem::relaxed);
}

}  // namespace

bool gpu_kernels_built() {
  return true;
}

cudaError_t preload_kernels() {
  return load_kernels(copy_kernel, signal_kernel, wait_kernel, barrier_kernel, atomic_kernel);
}

cudaError_t launch_copy(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0) return cudaSuccess;
  int blocks = static_cast<int>(std::min<size_t>(kMaxCopyBlocks, (bytes + kBytesPerBlock - 1) / kBytesPerBlock));
  copy_kernel<<<blocks, kCopyThreads, 0, s>>>(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  return cudaGetLastError();
}

cudaError_t launch_signal(const DeviceHandle& h, uint64_t* sig, uint64_t value, SignalOp op, int pe, cudaStream_t s) {
  signal_kernel<<<1, 1, 0, s>>>(h, sig, value, op, pe);
  return cudaGetLastError();
}

cudaError_t launch_wait(const DeviceHandle& h, uint64_t* ivar, Cmp cmp, uint64_t value, cudaStream_t s) {
  wait_kernel<<<1, 1, 0, s>>>(h, ivar, cmp, value);
  return cudaGetLastError();
}

cudaError_t launch_barrier(const DeviceHandle& h, const TeamHandle& team, cudaStream_t s) {
  barrier_kernel<<<1, 1, 0, s>>>(h, team);
  return cudaGetLastError();
}

cudaError_t launch_atomic(const DeviceHandle& h, AtomicOp op, unsigned width, void* dst, uint64_t operand,
                          uint64_t compare, int pe, uint64_t* result, cudaStream_t s) {
  atomic_kernel<<<1, 1, 0, s>>>(h, op, width, dst, operand, compare, pe, result);
  return cudaGetLastError();
}

}  // namespace gpucomm::detail
