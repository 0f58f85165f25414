// Host-side one-sided operations of GPU PEs: copies and small kernels on the runtime's stream,
// each followed by a synchronization that watches the job's liveness and the timeout, and turns
// a kernel's failure record into an error. Waits poll the local word with small reads.
#include <cstring>

#include "core/cuda_driver.hpp"
#include "core/host_wait.hpp"
#include "gpu_kernels.hpp"
#include "gpu_state.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"

namespace gpucomm {

void Runtime::gpu_sync(const char* op) {
  cudaError_t e = cudaSuccess;
  // The device waits carry the same limit and report more precisely; the host gives them time.
  int64_t limit = timeout_ms_ > 0 ? timeout_ms_ + 10000 : 0;
  detail::host_wait(
      [&] {
        e = cudaStreamQuery(gpu_->stream);
        return e != cudaErrorNotReady;
      },
      *bootstrap_, limit,
      [&] { return "rank " + std::to_string(rank_) + " " + op + ": waiting for the GPU to finish the operation"; });
  if (e != cudaSuccess) {
    check_device();
    check_cuda(e, op, "rank " + std::to_string(rank_) + " on GPU " + std::to_string(device_id_));
  }
}

void Runtime::gpu_read(void* out, const void* device_src, size_t bytes) {
  check_cuda(cudaMemcpyAsync(gpu_->result_host, device_src, bytes, cudaMemcpyDeviceToHost, gpu_->poll),
             "cudaMemcpyAsync", "reading a symmetric word");
  cudaError_t e = cudaStreamSynchronize(gpu_->poll);
  if (e != cudaSuccess) check_device();
  check_cuda(e, "cudaStreamSynchronize", "reading a symmetric word");
  std::memcpy(out, gpu_->result_host, bytes);
}

void Runtime::gpu_copy(void* dst, const void* src, size_t bytes, const char* op) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, gpu_->stream), "cudaMemcpyAsync",
             std::string(op) + " of " + std::to_string(bytes) + " bytes from " + hex(src) + " to " + hex(dst));
  gpu_sync(op);
}

void Runtime::gpu_signal(uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  check_cuda(detail::launch_signal(gpu_->handle, sig, value, op, pe, gpu_->stream), "signal",
             "launching the signal kernel");
  gpu_sync("signal");
}

uint64_t Runtime::gpu_atomic(AtomicOp op, unsigned width, void* dst, uint64_t operand, uint64_t compare, int pe,
                             const char* name) {
  check_cuda(detail::launch_atomic(gpu_->handle, op, width, dst, operand, compare, pe, gpu_->result_dev, gpu_->stream),
             name, "launching the atomic kernel");
  gpu_sync(name);
  // The kernel stored the result before the stream synchronization returned.
  return mem::host_load(gpu_->result_host, std::memory_order_acquire);
}

bool Runtime::gpu_all_reachable() const {
  for (int r = 0; r < size_; ++r)
    if (!heap_->peer_base(r)) return false;
  return true;
}

void Runtime::gpu_device_barrier(const Team& team) {
  check_cuda(detail::launch_barrier(gpu_->handle, device_team(team), gpu_->stream), "barrier",
             "launching the barrier kernel");
  gpu_sync("barrier");
}

template <class T>
T Runtime::gpu_wait_until(T* ivar, Cmp cmp, T value) {
  auto ok = [&](T v) {
    switch (cmp) {
      case Cmp::eq:
        return v == value;
      case Cmp::ne:
        return v != value;
      case Cmp::gt:
        return v > value;
      case Cmp::ge:
        return v >= value;
      case Cmp::lt:
        return v < value;
      case Cmp::le:
        return v <= value;
    }
    return false;
  };
  T seen{};
  detail::host_wait(
      [&] {
        gpu_read(&seen, ivar, sizeof seen);
        return ok(seen);
      },
      *bootstrap_, timeout_ms_,
      [&] {
        char off[32];
        std::snprintf(off, sizeof off, "0x%zx", heap_->offset_of(ivar));
        return "rank " + std::to_string(rank_) + " wait_until(heap+" + off + " " + cmp_name(cmp) + " " +
               std::to_string(value) + ", last seen " + std::to_string(seen) + ") on GPU " + std::to_string(device_id_);
      });
  return seen;
}

template int32_t Runtime::gpu_wait_until<int32_t>(int32_t*, Cmp, int32_t);
template uint32_t Runtime::gpu_wait_until<uint32_t>(uint32_t*, Cmp, uint32_t);
template int64_t Runtime::gpu_wait_until<int64_t>(int64_t*, Cmp, int64_t);
template uint64_t Runtime::gpu_wait_until<uint64_t>(uint64_t*, Cmp, uint64_t);

}  // namespace gpucomm
