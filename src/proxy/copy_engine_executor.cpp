#include "copy_engine_executor.hpp"

#include <cstring>

#include "copy_engine_kernels.hpp"
#include "gpucomm/core/cuda_check.hpp"

namespace gpucomm::proxy {

namespace {
constexpr uint64_t kStageSlots = 4096;
}

CopyEngineExecutor::CopyEngineExecutor(std::vector<char*> user_bases, int device) : bases_(std::move(user_bases)) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice", "copy-engine proxy on GPU " + std::to_string(device));
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
             "copy-engine proxy stream");
  void* p = nullptr;
  check_cuda(cudaHostAlloc(&p, kStageSlots * sizeof(uint64_t), cudaHostAllocDefault), "cudaHostAlloc",
             "proxy inline staging");
  staging_ = static_cast<uint64_t*>(p);
  check_cuda(preload_copy_engine_kernels(), "cudaFuncGetAttributes", "loading the copy-engine proxy's kernels");
}

CopyEngineExecutor::~CopyEngineExecutor() {
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (auto& g : groups_) (void)cudaEventDestroy(g.event);
  for (auto e : free_events_) (void)cudaEventDestroy(e);
  if (stream_) (void)cudaStreamDestroy(stream_);
  if (staging_) (void)cudaFreeHost(staging_);
}

char* CopyEngineExecutor::at(int pe, int64_t off) const {
  char* b = bases_[static_cast<size_t>(pe)];
  if (!b) {
    throw DescriptorFault(QueueFault::unreachable, Field::pe,
                          "PE " + std::to_string(pe) + "'s heap is not mapped on this GPU");
  }
  return b + off;
}

void CopyEngineExecutor::check(cudaError_t e, const char* call, const Descriptor& d) const {
  if (e == cudaSuccess) return;
  throw DescriptorFault(QueueFault::transport, Field::none,
                        std::string(call) + " for PE " + std::to_string(d.pe) + " (opcode " +
                            std::to_string(static_cast<unsigned>(d.opcode)) + ", " + std::to_string(d.bytes) +
                            " bytes): " + cudaGetErrorString(e));
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

uint64_t* CopyEngineExecutor::stage_inline(uint64_t value) {
  while (stage_next_ - stage_free_ >= kStageSlots) {  // every slot in flight: wait for the oldest round
    flush();
    check_cuda(cudaEventSynchronize(groups_.front().event), "cudaEventSynchronize", "copy-engine proxy");
    progress();
  }
  uint64_t* slot = &staging_[stage_next_++ % kStageSlots];
  *slot = value;
  return slot;
}

void CopyEngineExecutor::start(const Descriptor& d, uint64_t* done) {
  switch (d.opcode) {
    case Opcode::put:
      if (d.bytes) {
        check(cudaMemcpyAsync(at(d.pe, d.remote), reinterpret_cast<const void*>(d.local), d.bytes, cudaMemcpyDefault,
                              stream_),
              "cudaMemcpyAsync", d);
      }
      break;
    case Opcode::put_inline:
      check(cudaMemcpyAsync(at(d.pe, d.remote), stage_inline(d.value), d.bytes, cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync", d);
      break;
    case Opcode::get:
      if (d.bytes) {
        check(
            cudaMemcpyAsync(reinterpret_cast<void*>(d.local), at(d.pe, d.remote), d.bytes, cudaMemcpyDefault, stream_),
            "cudaMemcpyAsync", d);
      }
      break;
    case Opcode::put_signal:
      if (d.bytes) {
        check(cudaMemcpyAsync(at(d.pe, d.remote), reinterpret_cast<const void*>(d.local), d.bytes, cudaMemcpyDefault,
                              stream_),
              "cudaMemcpyAsync", d);
      }
      [[fallthrough]];
    case Opcode::signal:
      check(
          launch_signal_at(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), d.value, static_cast<SignalOp>(d.op), stream_),
          "signal kernel", d);
      break;
    case Opcode::atomic:
      check(launch_atomic_at(static_cast<AtomicOp>(d.op), d.width, at(d.pe, d.remote), d.value, d.compare,
                             reinterpret_cast<uint64_t*>(d.local), stream_),
            "atomic kernel", d);
      break;
    case Opcode::fence:  // one stream: entries are performed in order already
    case Opcode::nop:
      break;
  }
  unflushed_.push_back(done);
}

void CopyEngineExecutor::flush() {
  if (unflushed_.empty()) return;
  Group g{take_event(), std::move(unflushed_), stage_next_};
  unflushed_.clear();
  check_cuda(cudaEventRecord(g.event, stream_), "cudaEventRecord", "copy-engine proxy");
  groups_.push_back(std::move(g));
}

void CopyEngineExecutor::progress() {
  while (!groups_.empty()) {
    cudaError_t e = cudaEventQuery(groups_.front().event);
    if (e == cudaErrorNotReady) return;
    if (e != cudaSuccess) {
      throw DescriptorFault(QueueFault::transport, Field::none,
                            std::string("copy-engine proxy: a copy failed: ") + cudaGetErrorString(e));
    }
    Group& g = groups_.front();
    for (uint64_t* d : g.done) set_done(d);
    stage_free_ = g.stage_end;
    free_events_.push_back(g.event);
    groups_.pop_front();
  }
}

}  // namespace gpucomm::proxy
