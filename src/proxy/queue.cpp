// Queue memory: lays out the ring and the counters (each on its own 128-byte line) in up to three
// blocks - plain host memory, pinned host memory mapped into the device, device memory - by the
// rule of descriptor.hpp, and builds the producer's and the agent's views.
#include "gpucomm/proxy/queue.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/cuda_driver.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::proxy {

namespace {
enum class Where { host, pinned, device };
constexpr size_t kLine = 128;
size_t round_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}
}  // namespace

struct Queue::Block {
  Where where;
  size_t bytes = 0;
  char* host = nullptr;  // host address (host and pinned)
  char* dev = nullptr;   // device address (pinned and device)
  explicit Block(Where w) : where(w) {}
  size_t carve(size_t n) {
    size_t at = bytes;
    bytes += round_up(n, kLine);
    return at;
  }
  void allocate() {
    if (bytes == 0) return;
    switch (where) {
      case Where::host:
        host = static_cast<char*>(std::aligned_alloc(kLine, bytes));
        if (!host) {
          raise(Errc::out_of_memory, "proxy queue",
                "no host memory for a queue of " + std::to_string(bytes) + " bytes");
        }
        std::memset(host, 0, bytes);
        break;
      case Where::pinned: {
        void* p = nullptr;
        check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc",
                   "proxy queue words");
        host = static_cast<char*>(p);
        std::memset(host, 0, bytes);
        check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), p, 0), "cudaHostGetDevicePointer",
                   "proxy queue words");
        break;
      }
      case Where::device:
        check_cuda(cudaMalloc(reinterpret_cast<void**>(&dev), bytes), "cudaMalloc", "proxy queue in device memory");
        check_cuda(cudaMemset(dev, 0, bytes), "cudaMemset", "proxy queue in device memory");
        break;
    }
  }
  ~Block() {
    if (where == Where::host) std::free(host);
    if (where == Where::pinned && host) (void)cudaFreeHost(host);
    if (where == Where::device && dev) (void)cudaFree(dev);
  }
  // The address `side` uses for the word at `at`.
  template <class T>
  T* at(size_t off, Side side) const {
    char* base = where == Where::host ? host : where == Where::device ? dev : (side == Side::gpu ? dev : host);
    return reinterpret_cast<T*>(base + off);
  }
  template <class T>
  T* host_at(size_t off) const {
    return where == Where::device ? nullptr : reinterpret_cast<T*>(host + off);
  }
};

const char* placement_name(Placement p) {
  return p == Placement::device ? "device" : "host";
}
const char* side_name(Side s) {
  return s == Side::gpu ? "gpu" : "cpu";
}

Placement parse_placement(const std::string& text, const char* what) {
  if (text == "host") return Placement::host;
  if (text == "device") return Placement::device;
  raise_arg("proxy queue", what, "'" + text + "' is not one of host, device");
}

Queue::Queue(const QueueConfig& cfg, uint32_t id) : cfg_(cfg) {
  const uint32_t cap = cfg.capacity;
  GPUCOMM_CHECK_ARG(cap >= 2 && cap <= (1u << 24) && (cap & (cap - 1)) == 0, "proxy queue", "capacity",
                    std::to_string(cap) + " is not a power of two in [2, 2^24]");
  GPUCOMM_CHECK_ARG(!(cfg.producer == Side::cpu && cfg.agent == Side::gpu), "proxy queue", "agent",
                    "the GPU service block serves GPU producers only");
  const bool any_gpu = cfg.producer == Side::gpu || cfg.agent == Side::gpu;
  host_ = std::make_unique<Block>(Where::host);
  pinned_ = std::make_unique<Block>(Where::pinned);
  device_ = std::make_unique<Block>(Where::device);
  auto block = [&](Where w) -> Block& { return w == Where::host ? *host_ : w == Where::pinned ? *pinned_ : *device_; };
  const Where shared_host = any_gpu ? Where::pinned : Where::host;
  const Where producer_mem = cfg.producer == Side::gpu ? Where::device : Where::host;
  const Where polled = cfg.producer == Side::cpu ? Where::host : cfg.agent == Side::gpu ? Where::device : Where::pinned;
  const Where agent_mem = cfg.agent == Side::gpu ? Where::device : shared_host;
  const Where ring_mem = cfg.placement == Placement::device ? Where::device : shared_host;

  struct Slot {
    Where where;
    size_t off;
  };
  auto place = [&](Where w, size_t n) { return Slot{w, block(w).carve(n)}; };
  Slot ring = place(ring_mem, size_t(cap) * sizeof(Descriptor));
  Slot head = place(producer_mem, 8), cache = place(producer_mem, 8), results = place(producer_mem, size_t(cap) * 8);
  Slot consumed = place(polled, 8), completed = place(polled, 8);
  // GPU producers of a CPU agent wait on device-memory copies of consumed/completed that one
  // waiter at a time refreshes (descriptor.hpp); the others poll the agent's words directly.
  const bool mirrored = cfg.producer == Side::gpu && cfg.agent == Side::cpu;
  Slot completed_cache = mirrored ? place(producer_mem, 8) : Slot{Where::host, 0};
  Slot poller = mirrored ? place(producer_mem, 4) : Slot{Where::host, 0};
  Slot doorbell = place(agent_mem, 8);
  Slot status = place(shared_host, 4), ticket = place(shared_host, 8), field = place(shared_host, 4);
  Slot trace = cfg.trace ? place(shared_host, size_t(cap) * sizeof(TraceRecord)) : Slot{Where::host, 0};
  host_->allocate();
  pinned_->allocate();
  device_->allocate();

  auto fill = [&](QueueView& v, Side side) {
    v.ring = block(ring.where).at<Descriptor>(ring.off, side);
    v.head = block(head.where).at<uint64_t>(head.off, side);
    v.consumed = block(consumed.where).at<uint64_t>(consumed.off, side);
    v.consumed_cache = block(cache.where).at<uint64_t>(cache.off, side);
    v.completed = block(completed.where).at<uint64_t>(completed.off, side);
    v.completed_cache = mirrored ? block(completed_cache.where).at<uint64_t>(completed_cache.off, side) : nullptr;
    v.poller = mirrored ? block(poller.where).at<uint32_t>(poller.off, side) : nullptr;
    v.trace = cfg.trace ? block(trace.where).at<TraceRecord>(trace.off, side) : nullptr;
    v.doorbell = block(doorbell.where).at<uint64_t>(doorbell.off, side);
    v.results = block(results.where).at<uint64_t>(results.off, side);
    v.status = block(status.where).at<uint32_t>(status.off, side);
    v.fault_ticket = block(ticket.where).at<uint64_t>(ticket.off, side);
    v.fault_field = block(field.where).at<uint32_t>(field.off, side);
    v.capacity = cap;
    v.doorbell_every = cfg.doorbell_every;
    v.placement = cfg.placement;
    v.queue_id = id;
    v.gpu_agent = cfg.agent == Side::gpu ? 1u : 0u;
  };
  fill(producer_, cfg.producer);
  fill(agent_, cfg.agent);
  status_host_ = block(status.where).host_at<uint32_t>(status.off);
  fault_ticket_host_ = block(ticket.where).host_at<uint64_t>(ticket.off);
  fault_field_host_ = block(field.where).host_at<uint32_t>(field.off);
  completed_host_ = block(completed.where).host_at<uint64_t>(completed.off);
  if (cfg.trace) trace_host_ = block(trace.where).host_at<TraceRecord>(trace.off);
}

Queue::~Queue() = default;

uint32_t Queue::status() const {
  return std::atomic_ref<uint32_t>(*status_host_).load(std::memory_order_acquire);
}
uint64_t Queue::fault_ticket() const {
  return std::atomic_ref<uint64_t>(*fault_ticket_host_).load(std::memory_order_acquire);
}
Field Queue::fault_field() const {
  return static_cast<Field>(std::atomic_ref<uint32_t>(*fault_field_host_).load(std::memory_order_acquire));
}

namespace {
uint64_t read_word(const uint64_t* host, const uint64_t* any) {
  if (host) return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(host)).load(std::memory_order_acquire);
  // The per-thread stream: this read must not wait for kernels on the application's streams.
  uint64_t v = 0;
  check_cuda(cudaMemcpyAsync(&v, any, sizeof v, cudaMemcpyDeviceToHost, cudaStreamPerThread), "cudaMemcpyAsync",
             "reading a proxy queue counter");
  check_cuda(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize", "reading a proxy queue counter");
  return v;
}
}  // namespace

void Queue::mark_stopped() {
  std::atomic_ref<uint32_t> st(*status_host_);
  if (st.load(std::memory_order_acquire) != 0) return;
  std::atomic_ref<uint64_t>(*fault_ticket_host_).store(completed(), std::memory_order_relaxed);
  uint32_t healthy = 0;
  st.compare_exchange_strong(healthy, static_cast<uint32_t>(QueueFault::agent_stopped), std::memory_order_acq_rel);
}

uint64_t Queue::head() const {
  return read_word(cfg_.producer == Side::cpu ? producer_.head : nullptr, producer_.head) & kTicketMask;
}
uint64_t Queue::completed() const {
  return read_word(completed_host_, producer_.completed);
}

}  // namespace gpucomm::proxy
