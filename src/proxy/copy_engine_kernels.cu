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

}  // namespace

cudaError_t preload_copy_engine_kernels() {
  cudaFuncAttributes a;
  for (const void* f :
       {reinterpret_cast<const void*>(signal_at_kernel), reinterpret_cast<const void*>(atomic_at_kernel)})
    if (cudaError_t e = cudaFuncGetAttributes(&a, f); e != cudaSuccess) return e;
  return cudaSuccess;
}

cudaError_t launch_signal_at(uint64_t* addr, uint64_t value, SignalOp op, cudaStream_t s) {
  signal_at_kernel<<<1, 1, 0, s>>>(addr, value, op);
  return cudaGetLastError();
}

cudaError_t launch_atomic_at(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                             uint64_t* result, cudaStream_t s) {
  atomic_at_kernel<<<1, 1, 0, s>>>(op, width, addr, operand, compare, result);
  return cudaGetLastError();
}

}  // namespace gpucomm::proxy
