#include <algorithm>

#include "gpu_kernels.hpp"
#include "gpucomm/device/gpucomm_device.cuh"
#include "gpucomm/proxy/atomic_apply_device.cuh"

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
  device::detail::copy(coop::Block{}, dst + begin, src + begin, len);
}

__global__ void signal_kernel(DeviceHandle h, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  __threadfence_system();  // earlier copies of this stream are complete; make them visible first
  device::signal_op(h, sig, value, op, pe);
}

__global__ void wait_kernel(DeviceHandle h, uint64_t* ivar, Cmp cmp, uint64_t value) {
  device::wait_until(coop::Thread{}, h, ivar, cmp, value);
}

__global__ void barrier_kernel(DeviceHandle h) {
  __threadfence_system();
  device::detail::quiet_all_queues(h);  // earlier kernels' queued entries too (stream order)
  device::barrier_all(coop::Thread{}, h);
}

template <class T>
__device__ T apply_atomic(const DeviceHandle& h, AtomicKind kind, T* dst, T a, T b, int pe) {
  switch (kind) {
    case AtomicKind::fetch: return device::atomic_fetch(h, dst, pe);
    case AtomicKind::set: device::atomic_set(h, dst, a, pe); return T(0);
    case AtomicKind::fetch_add: return device::atomic_fetch_add(h, dst, a, pe);
    case AtomicKind::swap: return device::atomic_swap(h, dst, a, pe);
    case AtomicKind::compare_swap: return device::atomic_compare_swap(h, dst, a, b, pe);
    case AtomicKind::fetch_and: return device::atomic_fetch_and(h, dst, a, pe);
    case AtomicKind::fetch_or: return device::atomic_fetch_or(h, dst, a, pe);
    case AtomicKind::fetch_xor: return device::atomic_fetch_xor(h, dst, a, pe);
  }
  return T(0);
}

__global__ void atomic_kernel(DeviceHandle h, AtomicKind kind, unsigned width, void* dst, uint64_t a, uint64_t b, int pe,
                              uint64_t* result) {
  __threadfence_system();  // host atomics are ordered after the PE's earlier operations
  uint64_t old;
  if (width == 4)
    old = apply_atomic<uint32_t>(h, kind, static_cast<uint32_t*>(dst), static_cast<uint32_t>(a), static_cast<uint32_t>(b), pe);
  else
    old = apply_atomic<uint64_t>(h, kind, static_cast<uint64_t*>(dst), a, b, pe);
  __threadfence_system();
  *reinterpret_cast<volatile uint64_t*>(result) = old;
}

__global__ void signal_at_kernel(uint64_t* addr, uint64_t value, SignalOp op) {
  __threadfence_system();
  if (op == SignalOp::set)
    device::detail::store_release_sys(addr, value);
  else
    device::detail::add_release_sys(addr, value);
}

__global__ void atomic_at_kernel(AtomicKind kind, unsigned width, void* addr, uint64_t a, uint64_t b, uint64_t* result) {
  __threadfence_system();
  const uint64_t old = proxy::apply_atomic_device(addr, width, static_cast<proxy::AtomicOp>(kind), a, b);
  if (result) {
    __threadfence_system();
    *reinterpret_cast<volatile uint64_t*>(result) = old;
  }
}

}  // namespace

cudaError_t launch_signal_at(uint64_t* addr, uint64_t value, SignalOp op, cudaStream_t s) {
  signal_at_kernel<<<1, 1, 0, s>>>(addr, value, op);
  return cudaGetLastError();
}

cudaError_t launch_atomic_at(AtomicKind kind, unsigned width, void* addr, uint64_t a, uint64_t b, uint64_t* result, cudaStream_t s) {
  atomic_at_kernel<<<1, 1, 0, s>>>(kind, width, addr, a, b, result);
  return cudaGetLastError();
}

bool gpu_kernels_built() { return true; }

cudaError_t preload_kernels() {
  cudaFuncAttributes a;
  for (const void* f : {reinterpret_cast<const void*>(copy_kernel), reinterpret_cast<const void*>(signal_kernel),
                        reinterpret_cast<const void*>(wait_kernel), reinterpret_cast<const void*>(barrier_kernel),
                        reinterpret_cast<const void*>(atomic_kernel), reinterpret_cast<const void*>(signal_at_kernel),
                        reinterpret_cast<const void*>(atomic_at_kernel)})
    if (cudaError_t e = cudaFuncGetAttributes(&a, f); e != cudaSuccess) return e;
  return cudaSuccess;
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

cudaError_t launch_barrier(const DeviceHandle& h, cudaStream_t s) {
  barrier_kernel<<<1, 1, 0, s>>>(h);
  return cudaGetLastError();
}

cudaError_t launch_atomic(const DeviceHandle& h, AtomicKind kind, unsigned width, void* dst, uint64_t a, uint64_t b, int pe,
                          uint64_t* result, cudaStream_t s) {
  atomic_kernel<<<1, 1, 0, s>>>(h, kind, width, dst, a, b, pe, result);
  return cudaGetLastError();
}

}  // namespace gpucomm::detail
