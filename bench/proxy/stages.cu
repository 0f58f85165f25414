// The latency breakdown of a put_signal round trip through a proxy (see stages.hpp).
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "gpucomm/device/gpucomm_device.cuh"
#include "stages.hpp"

namespace proxy_bench {

namespace {

using namespace gpucomm;

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Round trips of 8-byte put_signal to this PE (block 0: queue 0), noting each entry's ticket and
// when the producer saw the signal.
__global__ void k_traced_trips(DeviceHandle h, char* buf, const char* src, uint64_t* sig, int iters, uint64_t base,
                               uint64_t* tickets, uint64_t* observed) {
  const proxy::QueueView& q = proxy::queue_of(h);
  for (int i = 0; i < iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i) + 1;
    // One producer on this queue: the head it reads is the ticket its post takes.
    tickets[i] = mem::load<mem::kDevice>(q.head, mem::relaxed) & proxy::kTicketMask;
    device::put_signal_nbi(coop::Thread{}, h, buf, src, 8, sig, v, SignalOp::set, 0);
    device::signal_wait_until(coop::Thread{}, h, sig, Cmp::ge, v);
    observed[i] = mem::globaltimer();
  }
  device::quiet(coop::Thread{}, h);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

bool measure_stages(Runtime& rt, const DeviceHandle& h, char* sym, const char* local, uint64_t* sig, uint64_t& base,
                    int iters, const ClockSync& sync, std::vector<bench::Result>& out) {
  if (rt.size() != 1 || h.num_queues == 0 || h.queue_per_warp) return false;
  proxy::QueueView view{};
  ck(cudaMemcpy(&view, h.queues, sizeof view, cudaMemcpyDeviceToHost), "reading queue 0's view");
  if (view.trace == nullptr) return false;
  uint64_t *tickets = nullptr, *observed = nullptr;
  ck(cudaMalloc(&tickets, sizeof(uint64_t) * static_cast<size_t>(iters)), "cudaMalloc");
  ck(cudaMalloc(&observed, sizeof(uint64_t) * static_cast<size_t>(iters)), "cudaMalloc");
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  k_traced_trips<<<1, 1, 0, s>>>(h, sym, local, sig, iters, base, tickets, observed);
  base += static_cast<uint64_t>(iters);
  ck(cudaGetLastError(), "launch");
  if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) {
    rt.check_device();
    ck(e, "traced round trips");
  }
  std::vector<uint64_t> t(static_cast<size_t>(iters)), obs(static_cast<size_t>(iters));
  ck(cudaMemcpy(t.data(), tickets, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
  ck(cudaMemcpy(obs.data(), observed, obs.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
  (void)cudaFree(tickets);
  (void)cudaFree(observed);
  std::vector<proxy::TraceRecord> recs(view.capacity);
  ck(cudaMemcpy(recs.data(), view.trace, recs.size() * sizeof(proxy::TraceRecord), cudaMemcpyDefault),
     "reading the trace records");
  // Host stamps to %globaltimer, in integers (the timer's values need more bits than a double has).
  const auto offset = static_cast<int64_t>(std::llround(sync.gpu_minus_host_ns));
  auto gpu_ns = [&](uint64_t stamp, bool host) { return static_cast<int64_t>(stamp) + (host ? offset : 0); };
  std::vector<double> post, notice, execute, deliver, total, complete;
  for (size_t i = static_cast<size_t>(iters) / 10; i < t.size(); ++i) {
    const proxy::TraceRecord& r = recs[t[i] & (view.capacity - 1)];
    if (r.ticket != t[i] + 1) continue;  // overwritten or not traced
    const bool producer_host = (r.clocks & proxy::kTraceProducerHost) != 0;
    const bool agent_host = (r.clocks & proxy::kTraceAgentHost) != 0;
    if ((producer_host || agent_host) && !sync.valid) return false;
    const int64_t p0 = gpu_ns(r.post, producer_host), p1 = gpu_ns(r.posted, producer_host);
    const int64_t seen = gpu_ns(r.seen, agent_host), issued = gpu_ns(r.issued, agent_host);
    const int64_t done = gpu_ns(r.completed, agent_host), o = static_cast<int64_t>(obs[i]);
    post.push_back(static_cast<double>(p1 - p0) * 1e-3);
    notice.push_back(static_cast<double>(seen - p1) * 1e-3);
    execute.push_back(static_cast<double>(issued - seen) * 1e-3);
    deliver.push_back(static_cast<double>(o - issued) * 1e-3);
    total.push_back(static_cast<double>(o - p0) * 1e-3);
    complete.push_back(static_cast<double>(done - issued) * 1e-3);
  }
  if (total.empty()) return false;
  const std::pair<const char*, const std::vector<double>*> stages[] = {{"post", &post},       {"notice", &notice},
                                                                       {"execute", &execute}, {"deliver", &deliver},
                                                                       {"total", &total},     {"complete", &complete}};
  for (const auto& [name, v] : stages) out.push_back(bench::Result{"stage_us", name, 8, 1, "us", {mean(*v)}});
  out.push_back(bench::Result{"clock_sync_uncertainty", "host_gpu", 0, 1, "us", {sync.uncertainty_ns * 1e-3}});
  return true;
}

}  // namespace proxy_bench
