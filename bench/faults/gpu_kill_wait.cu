// gpu-kill-wait VICTIM: two PEs share one GPU; the survivor's kernel waits on a word only the
// victim would signal, the victim is killed, and the kernel must leave within a second (the
// runtime sets the handle's job-state word from the thread that learns of the death; device
// waits poll it). The survivor checks the time from the kill to the kernel's end, and that the
// device record names the victim.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "fault_pe.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/device/gpucomm_device.cuh"
#include "gpucomm/gpucomm.hpp"

namespace faultpe {
namespace {

constexpr double kLimitS = 1.0;

__global__ void wait_for_victim(gpucomm::DeviceHandle h, uint64_t* sig, uint32_t* running) {
  gpucomm::mem::store<gpucomm::mem::kSystem>(running, 1u, gpucomm::mem::release);
  gpucomm::device::signal_wait_until(gpucomm::coop::Thread{}, h, sig, gpucomm::Cmp::eq, uint64_t{1});
}

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  say("PE ERROR rank %d: %s: %s", env_rank(), what, cudaGetErrorString(e));
  return false;
}

int survivor(gpucomm::Runtime& rt, uint64_t* sig) {
  char path[] = "/tmp/gpucomm-kill-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return kCheckFailed;
  ::close(fd);
  uint32_t* running = nullptr;
  cudaStream_t stream = nullptr;
  if (!cuda_ok(cudaHostAlloc(&running, sizeof(uint32_t), cudaHostAllocMapped), "cudaHostAlloc") ||
      !cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"))
    return kCheckFailed;
  *running = 0;
  uint32_t* running_dev = nullptr;
  if (!cuda_ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&running_dev), running, 0), "device pointer"))
    return kCheckFailed;
  wait_for_victim<<<1, 1, 0, stream>>>(rt.device_handle(), sig, running_dev);
  if (!cuda_ok(cudaGetLastError(), "launch")) return kCheckFailed;
  const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (gpucomm::mem::host_load(running, std::memory_order_acquire) == 0) {
    if (std::chrono::steady_clock::now() > bound) {
      say("CHECK FAILED rank 0: the waiting kernel did not start within 30 s");
      return kCheckFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  rt.bootstrap().set("faults/kill-file", path);  // the victim dies now
  // The kernel must leave by itself; the host gives it 10 s before calling it a failure.
  cudaError_t e = cudaErrorNotReady;
  const auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((e = cudaStreamQuery(stream)) == cudaErrorNotReady && std::chrono::steady_clock::now() < stop)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  const int64_t left_at = now_ns();
  if (e == cudaErrorNotReady) {
    say("CHECK FAILED rank 0: the kernel still waits on the dead PE after 10 s");
    std::_Exit(kCheckFailed);  // a kernel still runs: do not wait for it in teardown
  }
  int64_t killed_at = 0;
  if (FILE* f = std::fopen(path, "r")) {
    char text[32] = {};
    const size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::from_chars(text, text + n, killed_at);
    std::fclose(f);
  }
  ::unlink(path);
  const double latency = killed_at > 0 ? static_cast<double>(left_at - killed_at) / 1e9 : -1;
  std::string record;
  gpucomm::Errc code = gpucomm::Errc::internal;
  try {
    rt.check_device();
  } catch (const gpucomm::Error& err) {
    record = err.what();
    code = err.code();
  }
  say("RESULT rank 0 kernel_left_after_s=%.3f limit_s=%.1f", latency, kLimitS);
  say("DEVICE RECORD rank 0: %s", record.c_str());
  const bool named = code == gpucomm::Errc::peer_failure && record.find("PE 1 failed first") != std::string::npos;
  if (latency < 0 || latency > kLimitS || !named) {
    say("CHECK FAILED rank 0: the kernel left %.3f s after the kill (limit %.1f s); record %s", latency, kLimitS,
        named ? "names PE 1" : "does not name PE 1 as a peer failure");
    return kCheckFailed;
  }
  return 0;
}

void victim(gpucomm::Runtime& rt) {
  const std::string path = rt.bootstrap().get("faults/kill-file");
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "%lld\n", static_cast<long long>(now_ns()));
    std::fclose(f);
  }
  fault_here(rt.rank(), "SIGKILL while the other PE's kernel waits");
  ::raise(SIGKILL);
}

}  // namespace

int run_gpu(const std::string& scenario, int victim_rank, int /*arg*/) {
  if (scenario != "gpu-kill-wait") return -1;
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  if (gpus < 1) {
    say("[  SKIPPED ] gpu-kill-wait needs 1 GPU, found %d", gpus);
    return 0;
  }
  if (const char* tool = std::getenv("GPUCOMM_UNDER_SANITIZER")) {
    say("[  SKIPPED ] gpu-kill-wait under compute-sanitizer %s: the waiting kernel leaves by a device trap", tool);
    return 0;
  }
  if (victim_rank != 1) {
    std::fprintf(stderr, "gpu-kill-wait: the victim must be rank 1 (rank 0 serves the store)\n");
    return kUsage;
  }
  return with_runtime([](gpucomm::Runtime& rt) {
    if (rt.size() != 2) {
      say("PE ERROR rank %d: gpu-kill-wait runs on 2 PEs", rt.rank());
      return kUsage;
    }
    auto* sig = static_cast<uint64_t*>(rt.calloc(1, sizeof(uint64_t)));
    rt.barrier_all();
    if (rt.rank() == 1) victim(rt);
    return survivor(rt, sig);
  });
}

}  // namespace faultpe
