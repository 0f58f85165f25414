// Device code from an installed gpucomm compiles in a consumer's own translation unit, without
// -rdc or device linking: a ring of put-with-signal in a kernel, the values of waits and atomics
// given as literals. On GPU PEs it runs; on host-memory PEs it only proves that it builds.
#include <cstdio>
#include <gpucomm/device/gpucomm_device.cuh>
#include <gpucomm/gpucomm.hpp>

using namespace gpucomm;

__global__ void ring(DeviceHandle h, int64_t* inbox, const int64_t* mine, uint64_t* flag, uint64_t* counter) {
  coop::Block blk;
  const int right = (h.rank + 1) % h.size;
  device::put_signal(blk, h, inbox, mine, sizeof(int64_t), flag, 1, SignalOp::set, right);
  device::signal_wait_until(blk, h, flag, Cmp::ge, 1);
  if (threadIdx.x == 0) {
    device::atomic_add(h, counter, 1, 0);
    device::p(h, inbox + 1, 7, h.rank);
  }
}

int main() {
  try {
    Runtime rt;
    if (rt.pe_kind() != PeKind::gpu) {
      std::printf("consumer_kernel: rank %d of %d built; host-memory PEs run no kernel\n", rt.rank(), rt.size());
      return 0;
    }
    auto* inbox = static_cast<int64_t*>(rt.calloc(2, sizeof(int64_t)));
    auto* mine = static_cast<int64_t*>(rt.calloc(1, sizeof(int64_t)));
    auto* flag = static_cast<uint64_t*>(rt.calloc(1, sizeof(uint64_t)));
    auto* counter = static_cast<uint64_t*>(rt.calloc(1, sizeof(uint64_t)));
    rt.p(mine, 1000 + rt.rank(), rt.rank());
    rt.barrier_all();
    ring<<<1, 128, 0, rt.stream()>>>(rt.device_handle(), inbox, mine, flag, counter);
    if (cudaError_t err = cudaStreamSynchronize(rt.stream()); err != cudaSuccess) {
      rt.check_device();  // raises the device's record of a failed wait, if there is one
      std::fprintf(stderr, "consumer_kernel: the ring kernel failed: %s\n", cudaGetErrorString(err));
      return 1;
    }
    rt.barrier_all();
    const int left = (rt.rank() + rt.size() - 1) % rt.size();
    const bool ok = rt.g(inbox, rt.rank()) == 1000 + left && rt.g(inbox + 1, rt.rank()) == 7 &&
                    (rt.rank() != 0 || rt.g(counter, 0) == static_cast<uint64_t>(rt.size()));
    std::printf("consumer_kernel: rank %d of %d: %s\n", rt.rank(), rt.size(), ok ? "ok" : "WRONG");
    rt.barrier_all();
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "consumer_kernel: %s\n", e.what());
    return 1;
  }
}
