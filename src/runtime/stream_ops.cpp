// Stream-ordered one-sided operations of GPU PEs: kernels only, no host synchronization, so
// they can be captured into CUDA graphs.
#include "core/cuda_driver.hpp"
#include "gpu_kernels.hpp"
#include "gpu_state.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm {

namespace {
void need_gpu(const void* gpu, const char* op) {
  if (!gpu) raise(Errc::unsupported, op, "stream-ordered operations exist on GPU PEs only");
}
}  // namespace

void Runtime::put_on_stream(void* dst, const void* src, size_t bytes, int pe, Stream stream) {
  need_gpu(gpu_.get(), "put_on_stream");
  char* r = remote(dst, bytes, pe, "put_on_stream");
  check_cuda(detail::launch_copy(r, src, bytes, stream), "put_on_stream", "launching the copy kernel");
}

void Runtime::get_on_stream(void* dst, const void* src, size_t bytes, int pe, Stream stream) {
  need_gpu(gpu_.get(), "get_on_stream");
  char* r = remote(src, bytes, pe, "get_on_stream");
  check_cuda(detail::launch_copy(dst, r, bytes, stream), "get_on_stream", "launching the copy kernel");
}

void Runtime::put_signal_on_stream(void* dst, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op,
                                   int pe, Stream stream) {
  need_gpu(gpu_.get(), "put_signal_on_stream");
  char* r = remote(dst, bytes, pe, "put_signal_on_stream");
  GPUCOMM_CHECK_ARG(is_valid(op), "put_signal_on_stream", "op",
                    std::to_string(static_cast<uint32_t>(op)) + " is not a SignalOp");
  remote(sig, sizeof(uint64_t), pe, "put_signal_on_stream");
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(sig) % 8 == 0, "put_signal_on_stream", "sig", "is not 8-byte aligned");
  check_cuda(detail::launch_copy(r, src, bytes, stream), "put_signal_on_stream", "launching the copy kernel");
  // The signal kernel starts after the copy kernel finished and fences before its release.
  check_cuda(detail::launch_signal(gpu_->handle, sig, value, op, pe, stream), "put_signal_on_stream",
             "launching the signal kernel");
}

void Runtime::signal_on_stream(uint64_t* sig, uint64_t value, SignalOp op, int pe, Stream stream) {
  need_gpu(gpu_.get(), "signal_on_stream");
  remote(sig, sizeof(uint64_t), pe, "signal_on_stream");
  GPUCOMM_CHECK_ARG(is_valid(op), "signal_on_stream", "op",
                    std::to_string(static_cast<uint32_t>(op)) + " is not a SignalOp");
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(sig) % 8 == 0, "signal_on_stream", "sig", "is not 8-byte aligned");
  check_cuda(detail::launch_signal(gpu_->handle, sig, value, op, pe, stream), "signal_on_stream",
             "launching the signal kernel");
}

void Runtime::wait_until_on_stream(uint64_t* sig, Cmp cmp, uint64_t value, Stream stream) {
  need_gpu(gpu_.get(), "wait_until_on_stream");
  remote(sig, sizeof(uint64_t), rank_, "wait_until_on_stream");
  GPUCOMM_CHECK_ARG(is_valid(cmp), "wait_until_on_stream", "cmp",
                    std::to_string(static_cast<uint32_t>(cmp)) + " is not a Cmp");
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(sig) % 8 == 0, "wait_until_on_stream", "sig", "is not 8-byte aligned");
  check_cuda(detail::launch_wait(gpu_->handle, sig, cmp, value, stream), "wait_until_on_stream",
             "launching the wait kernel");
}

void Runtime::barrier_on_stream(Stream stream) {
  need_gpu(gpu_.get(), "barrier_on_stream");
  check_open("barrier_on_stream");
  if (!gpu_all_reachable()) {
    raise(Errc::unsupported, "barrier_on_stream",
          "some PEs are not reachable from this GPU; device barriers need every PE");
  }
  check_cuda(detail::launch_barrier(gpu_->handle, device_team(world_), stream), "barrier_on_stream",
             "launching the barrier kernel");
}

}  // namespace gpucomm
