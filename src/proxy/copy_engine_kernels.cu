#include "copy_engine_kernels.hpp"
#include "gpucomm/base/ordering_device.cuh"

namespace gpucomm::proxy {
namespace {

// Stream order completes the earlier copies before this kernel starts. The copy engine's writes
// are not operations of any thread, so the PTX model's release alone does not cover them: the
// leading system-scope fence (as for every "after earlier stream work" kernel of gpucomm) puts
// everything this GPU completed before it ahead of the signal, which is then released.
__global__ void signal_at_kernel(uint64_t* addr, uint64_t value, SignalOp op) {
  mem::fence<mem::kSystem>(mem::seq_cst);
  mem::signal<mem::kSystem>(addr, op, value);
}

__global__ void atomic_at_kernel(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                                 uint64_t* result) {
  mem::fence<mem::kSystem>(mem::seq_cst);  // as above: after the stream's earlier copies
  const uint64_t old = mem::apply_atomic<mem::kSystem>(addr, width, op, operand, compare, mem::acq_rel);
  // Read by the proxy thread after the stream's event completed.
  if (result) mem::store<mem::kSystem>(result, old, mem::relaxed);
}

// Inline puts of one proxy round: thread i performs write i. The writes are unordered among
// themselves (the proxy keeps at most one write per word in a batch); stream order puts them after
// the earlier copies and before later signals.
__global__ void scatter_kernel(const ScatterWrite* w, uint32_t n) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const ScatterWrite e = w[i];
  const uint64_t bytes = e.addr_bytes >> kScatterSizeShift;
  char* dst = reinterpret_cast<char*>(e.addr_bytes & ((uint64_t(1) << kScatterSizeShift) - 1));
  const auto a = reinterpret_cast<uintptr_t>(dst);
  if (bytes == 8 && (a & 7u) == 0) {
    *reinterpret_cast<uint64_t*>(dst) = e.value;
  } else if (bytes == 4 && (a & 3u) == 0) {
    *reinterpret_cast<uint32_t*>(dst) = static_cast<uint32_t>(e.value);
  } else {
    for (uint64_t b = 0; b < bytes; ++b) dst[b] = static_cast<char>(e.value >> (8 * b));
  }
}

}  // namespace

cudaError_t preload_copy_engine_kernels() {
  cudaFuncAttributes a;
  for (const void* f : {reinterpret_cast<const void*>(signal_at_kernel),
                        reinterpret_cast<const void*>(atomic_at_kernel), reinterpret_cast<const void*>(scatter_kernel)})
    if (cudaError_t e = cudaFuncGetAttributes(&a, f); e != cudaSuccess) return e;
  return cudaSuccess;
}

cudaError_t launch_signal_at(uint64_t* addr, uint64_t value, SignalOp op, cudaStream_t s) {
  signal_at_kernel<<<1, 1, 0, s>>>(addr, value, op);
  return cudaGetLastError();
}

cudaError_t launch_scatter(const ScatterWrite* w, uint32_t n, cudaStream_t s) {
  constexpr uint32_t kThreads = 256;
  scatter_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, s>>>(w, n);
  return cudaGetLastError();
}

cudaError_t launch_atomic_at(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                             uint64_t* result, cudaStream_t s) {
  atomic_at_kernel<<<1, 1, 0, s>>>(op, width, addr, operand, compare, result);
  return cudaGetLastError();
}

}  // namespace gpucomm::proxy
