#include "copy_engine_executor.hpp"

#include <atomic>
#include <string>

#include "core/host_wait.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::proxy {

namespace {
constexpr uint64_t kStageSlots = uint64_t(1) << 16;  // pinned scatter slots (1 MiB)

[[noreturn]] void transport_fault(const std::string& what, cudaError_t e) {
  throw DescriptorFault(QueueFault::transport, Field::none,
                        "copy-engine proxy: " + what + ": " + cudaGetErrorString(e));
}
}  // namespace

CopyEngineExecutor::CopyEngineExecutor(std::vector<char*> user_bases, int device, CopyEngineOptions opts)
    : opts_(opts), bases_(std::move(user_bases)) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice", "copy-engine proxy on GPU " + std::to_string(device));
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
             "copy-engine proxy stream");
  void* p = nullptr;
  check_cuda(cudaHostAlloc(&p, kStageSlots * sizeof(ScatterWrite), cudaHostAllocMapped), "cudaHostAlloc",
             "proxy scatter staging");
  staging_ = static_cast<ScatterWrite*>(p);
  check_cuda(cudaHostAlloc(&p, sizeof(uint64_t), cudaHostAllocMapped), "cudaHostAlloc", "proxy completion word");
  done_host_ = static_cast<uint64_t*>(p);
  *done_host_ = 0;
  void* dev = nullptr;
  check_cuda(cudaHostGetDevicePointer(&dev, p, 0), "cudaHostGetDevicePointer", "proxy completion word");
  done_dev_ = reinterpret_cast<uint64_t>(dev);
  check_cuda(preload_copy_engine_kernels(), "cudaFuncGetAttributes", "loading the copy-engine proxy's kernels");
  if (opts_.memops) memop_ = probe_memops();
  RoundLimits limits;
  limits.memops = memop_ != nullptr;
  limits.memop_max = opts_.memop_max;
  limits.slots = kStageSlots;
  StreamOps& ops = *this;  // the base is private: convert here
  round_ = std::make_unique<RoundBuilder>(ops, limits, staging_);
}

CopyEngineExecutor::~CopyEngineExecutor() {
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (auto& g : groups_)
    if (g.event) (void)cudaEventDestroy(g.event);
  for (auto e : free_events_) (void)cudaEventDestroy(e);
  if (stream_) (void)cudaStreamDestroy(stream_);
  if (staging_) (void)cudaFreeHost(staging_);
  if (done_host_) (void)cudaFreeHost(done_host_);
}

// Stream memory operations need the driver's support (64-bit ones a capable device): a write into
// a scratch word and one into the completion word show whether this GPU and driver take them.
BatchMemOpFn CopyEngineExecutor::probe_memops() {
  BatchMemOpFn fn = batch_mem_op();
  if (!fn) {
    GPUCOMM_LOG(info, "proxy: the driver has no cuStreamBatchMemOp; inline puts and signals use kernels");
    return nullptr;
  }
  uint64_t* scratch = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&scratch), sizeof(uint64_t)) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  CUstreamBatchMemOpParams ops[3] = {write_op(reinterpret_cast<uint64_t>(scratch), 7, true), barrier_op(),
                                     write_op(done_dev_, 0, true)};
  const CUresult r = fn(reinterpret_cast<CUstream>(stream_), 3, ops, 0);
  uint64_t seen = 0;
  const bool ok = r == CUDA_SUCCESS && cudaStreamSynchronize(stream_) == cudaSuccess &&
                  cudaMemcpy(&seen, scratch, sizeof seen, cudaMemcpyDeviceToHost) == cudaSuccess && seen == 7;
  (void)cudaGetLastError();
  (void)cudaFree(scratch);
  if (!ok) {
    GPUCOMM_LOG(info, "proxy: stream memory operations unavailable (driver error "
                          << static_cast<int>(r) << "); inline puts and signals use kernels");
    return nullptr;
  }
  return fn;
}

char* CopyEngineExecutor::at(int pe, int64_t off) const {
  char* b = bases_[static_cast<size_t>(pe)];
  if (!b) {
    throw DescriptorFault(QueueFault::unreachable, Field::pe,
                          "PE " + std::to_string(pe) + "'s heap is not mapped on this GPU");
  }
  return b + off;
}

cudaEvent_t CopyEngineExecutor::take_event() {
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags",
             "copy-engine proxy event");
  return e;
}

// ---- StreamOps ----

void CopyEngineExecutor::copy(char* dst, const char* src, uint64_t bytes) {
  if (cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_); e != cudaSuccess)
    transport_fault("cudaMemcpyAsync of " + std::to_string(bytes) + " bytes", e);
}

void CopyEngineExecutor::memops(CUstreamBatchMemOpParams* ops, unsigned n) {
  if (const CUresult r = memop_(reinterpret_cast<CUstream>(stream_), n, ops, 0); r != CUDA_SUCCESS) {
    throw DescriptorFault(QueueFault::transport, Field::none,
                          "copy-engine proxy: cuStreamBatchMemOp failed with CUDA driver error " +
                              std::to_string(static_cast<int>(r)) +
                              " (GPUCOMM_PROXY_MEMOPS=0 issues inline puts and signals as kernels)");
  }
}

void CopyEngineExecutor::scatter(const ScatterWrite* w, uint32_t n) {
  if (cudaError_t e = launch_scatter(w, n, stream_); e != cudaSuccess)
    transport_fault("scatter kernel of " + std::to_string(n) + " writes", e);
}

void CopyEngineExecutor::signal_kernel(uint64_t* addr, uint64_t value, SignalOp op) {
  if (cudaError_t e = launch_signal_at(addr, value, op, stream_); e != cudaSuccess) transport_fault("signal kernel", e);
}

void CopyEngineExecutor::atomic_kernel(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                                       uint64_t* result) {
  if (cudaError_t e = launch_atomic_at(op, width, addr, operand, compare, result, stream_); e != cudaSuccess)
    transport_fault("atomic kernel", e);
}

// Every staging slot is in flight: close a round without entries (unless the last one covers the
// slots) and wait until the stream passed enough of them.
void CopyEngineExecutor::reclaim_slots() {
  if (groups_.empty() || groups_.back().stage_end < round_->stage_next()) close_round({}, false);
  detail::host_wait(
      [&] {
        progress();
        return groups_.empty();
      },
      nullptr, opts_.timeout_ms,
      [] { return std::string("copy-engine proxy: waiting for its stream to free staging"); });
}

// ---- rounds ----

void CopyEngineExecutor::start(const Descriptor& d, uint64_t* done) {
  RoundBuilder& r = *round_;
  const bool here = d.pe == opts_.self;
  round_remote_ = round_remote_ || !here;
  switch (d.opcode) {
    case Opcode::put:
      r.copy(at(d.pe, d.remote), reinterpret_cast<const char*>(d.local), d.bytes);
      break;
    case Opcode::put_inline:
      r.write(reinterpret_cast<uint64_t>(at(d.pe, d.remote)), d.value, static_cast<uint32_t>(d.bytes));
      break;
    case Opcode::get:
      r.copy(reinterpret_cast<char*>(d.local), at(d.pe, d.remote), d.bytes);
      break;
    case Opcode::put_signal:
      r.copy(at(d.pe, d.remote), reinterpret_cast<const char*>(d.local), d.bytes);
      r.signal(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), d.value, static_cast<SignalOp>(d.op), here);
      break;
    case Opcode::put_signal_inline:
      r.write(reinterpret_cast<uint64_t>(at(d.pe, d.remote)), d.compare, static_cast<uint32_t>(d.bytes));
      r.signal(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), d.value, static_cast<SignalOp>(d.op), here);
      break;
    case Opcode::signal:
      r.signal(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), d.value, static_cast<SignalOp>(d.op), here);
      break;
    case Opcode::atomic:
      r.atomic(static_cast<AtomicOp>(d.op), d.width, at(d.pe, d.remote), d.value, d.compare,
               reinterpret_cast<uint64_t*>(d.local));
      break;
    case Opcode::fence:  // one stream: entries are performed in order already
    case Opcode::nop:
      break;
  }
  unflushed_.push_back(done);
}

// Ends a round: its completion mark after everything issued so far (through the builder, which
// issues what it holds first, or directly while the builder waits for staging).
void CopyEngineExecutor::close_round(std::vector<uint64_t*> done, bool through_builder) {
  Group g{++round_no_, nullptr, std::move(done), round_->stage_next()};
  if (memop_) {
    // After everything of the round (in the same call when the builder holds memory operations):
    // a barrier, GPU-wide when every entry of the round targeted this PE (whose readers are on this
    // GPU; the proxy learns of the completion before they do), then the round's number.
    CUstreamBatchMemOpParams mark[2] = {barrier_op(!round_remote_), write_op(done_dev_, g.round, true)};
    if (through_builder) {
      round_->finish(mark, 2);
    } else {
      memops(mark, 2);
    }
  } else {
    if (through_builder) round_->finish();
    g.event = take_event();
    check_cuda(cudaEventRecord(g.event, stream_), "cudaEventRecord", "copy-engine proxy");
  }
  groups_.push_back(std::move(g));
  if (through_builder) round_remote_ = false;  // a mark inside a round leaves the round's flag
}

void CopyEngineExecutor::flush() {
  if (unflushed_.empty()) {
    round_->finish();
    return;
  }
  std::vector<uint64_t*> done = std::move(unflushed_);
  unflushed_.clear();
  close_round(std::move(done), true);
}

void CopyEngineExecutor::progress() {
  if (groups_.empty()) return;
  const uint64_t finished = memop_ ? std::atomic_ref<uint64_t>(*done_host_).load(std::memory_order_acquire) : 0;
  bool advanced = false;
  while (!groups_.empty()) {
    Group& g = groups_.front();
    if (g.event) {
      const cudaError_t e = cudaEventQuery(g.event);
      if (e == cudaErrorNotReady) break;
      if (e != cudaSuccess) transport_fault("a copy failed", e);
      free_events_.push_back(g.event);
    } else if (g.round > finished) {
      break;
    }
    for (uint64_t* d : g.done) set_done(d);
    round_->release_slots(g.stage_end);
    groups_.pop_front();
    advanced = true;
  }
  // The host word cannot report a failed stream: ask the stream now and then while waiting.
  if (advanced || groups_.empty()) {
    idle_polls_ = 0;
  } else if (memop_ && (++idle_polls_ & 1023u) == 0) {
    const cudaError_t e = cudaStreamQuery(stream_);
    if (e != cudaSuccess && e != cudaErrorNotReady) transport_fault("the stream failed", e);
  }
}

}  // namespace gpucomm::proxy
