// Running operation lists (op_list.hpp): host-memory PEs with the host backend at once, GPU PEs as
// one kernel on a stream; the staging of host-memory buffers for GPU PEs' blocking calls.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>

#include "gpu_ops.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "messenger_impl.hpp"

namespace gpucomm::msg {

void Messenger::Impl::run(detail::OpList& list, Stream on, bool sync, const char* op) {
  if (!gpu) {
    on_host(op, [&](detail::HostBackend& b) {
      detail::run_ops(b, coop::Thread{}, view, list);
      return 0;
    });
    return;
  }
  auto* s = reinterpret_cast<cudaStream_t>(on ? on : stream);
  check_cuda(detail::launch_ops(rt.device_handle(), view, list, s), op, "launching the messaging kernel");
  if (!sync) return;
  const cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    if (diag_host && std::atomic_ref<uint32_t>(diag_host->state).load(std::memory_order_acquire) == 2u)
      detail::raise_diag(*diag_host, cfg);
    rt.check_device();
    check_cuda(e, op, "the messaging kernel failed");
  }
}

bool Messenger::Impl::device_accessible(const void* p) const {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ||
         (a.type == cudaMemoryTypeHost && a.devicePointer != nullptr);
}

void* Messenger::Impl::device_view(const void* buf, size_t n, bool in, const char* op, const char* arg, int slot) {
  if (n == 0 || device_accessible(buf)) return const_cast<void*>(buf);
  void*& st = staging[slot & 1];
  size_t& cap = staging_bytes[slot & 1];
  if (n > cap) {
    if (st) (void)cudaFree(st);
    st = nullptr;
    cap = 0;
    check_cuda(cudaMalloc(&st, n), op, std::string("staging ") + arg);
    cap = n;
  }
  if (in) check_cuda(cudaMemcpy(st, buf, n, cudaMemcpyHostToDevice), op, std::string("staging ") + arg);
  return st;
}

void Messenger::Impl::staged_out(void* buf, const void* dev, size_t n) const {
  if (n == 0 || dev == buf) return;
  check_cuda(cudaMemcpy(buf, dev, n, cudaMemcpyDeviceToHost), "msg::recv", "copying the staged message out");
}

}  // namespace gpucomm::msg
