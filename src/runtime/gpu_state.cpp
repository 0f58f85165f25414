// Set-up and teardown of a GPU PE's host-side state, the device handle and check_device().
#include "gpu_state.hpp"

#include <cstring>

#include "core/cuda_driver.hpp"
#include "gpu_kernels.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/error.hpp"
#include "heap/device_heap.hpp"

namespace gpucomm {

Runtime::GpuState::~GpuState() {
  registrations.clear();
  if (stream) (void)cudaStreamDestroy(stream);
  if (poll) (void)cudaStreamDestroy(poll);
  if (diag_host) (void)cudaFreeHost(diag_host);
  if (result_host) (void)cudaFreeHost(result_host);
  if (job_state_host) (void)cudaFreeHost(job_state_host);
}

void Runtime::gpu_init() {
  check_cuda(detail::preload_kernels(), "preload_kernels", "loading gpucomm's kernels");
  auto g = std::make_unique<GpuState>();
  check_cuda(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
             "host operation stream");
  check_cuda(cudaStreamCreateWithFlags(&g->poll, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "polling stream");
  void* p = nullptr;
  check_cuda(cudaHostAlloc(&p, sizeof(DeviceDiag), cudaHostAllocMapped), "cudaHostAlloc", "device diagnostic record");
  g->diag_host = static_cast<DeviceDiag*>(p);
  *g->diag_host = DeviceDiag{};
  check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&g->diag_dev), p, 0), "cudaHostGetDevicePointer",
             "diagnostic record");
  check_cuda(cudaHostAlloc(&p, 64, cudaHostAllocMapped), "cudaHostAlloc", "result slots");
  g->result_host = static_cast<uint64_t*>(p);
  check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&g->result_dev), p, 0), "cudaHostGetDevicePointer",
             "result slots");
  check_cuda(cudaHostAlloc(&p, sizeof(uint32_t), cudaHostAllocMapped), "cudaHostAlloc", "job-state word");
  g->job_state_host = static_cast<uint32_t*>(p);
  *g->job_state_host = 0;
  check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&g->job_state_dev), p, 0), "cudaHostGetDevicePointer",
             "job-state word");
  auto* dh = static_cast<heap::DeviceHeap*>(heap_.get());
  DeviceHandle& h = g->handle;
  h.magic = kHandleMagic;
  h.version = kHandleVersion;
  h.bytes = sizeof(DeviceHandle);
  h.rank = rank_;
  h.size = size_;
  h.heap_base = dh->base();
  h.heap_size = dh->size();
  h.peer_bases = dh->device_peer_bases();
  h.diag = g->diag_dev;
  h.job_state = g->job_state_dev;
  h.timeout_ns = static_cast<uint64_t>(timeout_ms_) * 1000000ull;
  h.transport = TransportKind::automatic;  // direct (the proxy layer fills these in when it serves a PE)
  h.num_queues = 0;
  h.queues = nullptr;
  h.queue_per_warp = 0;
  h.flags = 0;
  gpu_ = std::move(g);
  // From now on the thread that learns of the job's failure (the store's notice, a dead peer, the
  // launcher's lifeline, this PE's abort) stores the failed PE's rank + 1 here, and every device
  // wait of this PE leaves within milliseconds; release() unregisters it before freeing it.
  bootstrap_->set_job_state_word(gpu_->job_state_host);
}

DeviceHandle Runtime::device_handle_checked(uint32_t version, size_t bytes) const {
  if (!gpu_) {
    raise(Errc::unsupported, "Runtime::device_handle",
          "this is a host-memory PE; device handles exist on GPU PEs (GPUCOMM_DEVICE=gpu or auto with a GPU)");
  }
  if (version != kHandleVersion || bytes != sizeof(DeviceHandle)) {
    raise_arg("Runtime::device_handle", "headers",
              "the program was compiled against gpucomm headers of handle version " + std::to_string(version) + " (" +
                  std::to_string(bytes) + "-byte DeviceHandle), this library has version " +
                  std::to_string(kHandleVersion) + " (" + std::to_string(sizeof(DeviceHandle)) +
                  " bytes): rebuild it against this library's headers");
  }
  return gpu_->handle;
}

Stream Runtime::stream() const {
  if (!gpu_) raise(Errc::unsupported, "Runtime::stream", "host-memory PEs have no CUDA stream");
  return gpu_->stream;
}

bool Runtime::device_record(DeviceDiag* out) const {
  if (!gpu_) return false;
  const uint32_t* state = &gpu_->diag_host->state;
  if (mem::host_load(state, std::memory_order_acquire) == DeviceDiag::kEmpty) return false;
  // A record being written is complete within microseconds of the first failing thread; the
  // acquire of kReady makes its fields visible (the device released them with the state).
  for (int i = 0; i < 100000 && mem::host_load(state, std::memory_order_acquire) != DeviceDiag::kReady; ++i) {
  }
  std::memcpy(out, gpu_->diag_host, sizeof *out);
  return true;
}

std::string Runtime::own_device_failure() const {
  DeviceDiag d;
  if (!device_record(&d) || d.fault == DeviceFault::aborted) return {};
  return "a kernel failed on GPU " + std::to_string(device_id_) + ": " +
         detail::describe_device_failure(d, heap_ ? heap_->size() : 0);
}

void Runtime::check_device() const {
  DeviceDiag copy;
  if (!device_record(&copy)) return;
  const std::string text = detail::describe_device_failure(copy, heap_ ? heap_->size() : 0);
  // A kernel of this PE failed by itself: its CUDA context is unusable, and peers may be waiting on
  // the device for what it would have sent. The job fails now, so their waits leave at once naming
  // this PE (a record of a wait that left because the job failed elsewhere names that failure).
  if (copy.fault != DeviceFault::aborted && bootstrap_ && !bootstrap_->failed())
    bootstrap_->abort(own_device_failure());
  const Errc code = copy.fault == DeviceFault::timeout   ? Errc::timeout
                    : copy.fault == DeviceFault::aborted ? Errc::peer_failure
                                                         : Errc::invalid_argument;
  raise(code, "device", text);
}

}  // namespace gpucomm
