// README's C++ example, compiled by the build and run as GPU tests (runtime_readme_example_np1, _np2); the
// README shows the code between the markers.
// example-begin
// ring.cu: each PE's kernel puts a value into the next PE's symmetric memory with a signal, and
// waits for the previous PE's. Run it as `gpucomm run -n 2 ./ring` (one PE per GPU).
#include <cuda_runtime.h>

#include <cstdio>

#include "gpucomm/device/gpucomm_device.cuh"
#include "gpucomm/gpucomm.hpp"

using namespace gpucomm;

__global__ void ring(DeviceHandle h, uint64_t* inbox, uint64_t* signal, uint64_t* outbox) {
  const coop::Thread me{};
  *outbox = 1000 + h.rank;
  device::put_signal(me, h, inbox, outbox, sizeof(uint64_t), signal, 1, SignalOp::set, (h.rank + 1) % h.size);
  device::signal_wait_until(me, h, signal, Cmp::ge, 1);  // the previous PE's value is in inbox
}

int main() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::puts("  SKIPPED : this example needs a GPU");
    return 0;
  }
  Runtime rt;  // one PE; collective set-up with the other processes of the job
  auto* words = static_cast<uint64_t*>(rt.calloc(3, sizeof(uint64_t)));  // symmetric heap
  ring<<<1, 1, 0, rt.stream()>>>(rt.device_handle(), words, words + 1, words + 2);
  uint64_t got = 0;
  cudaMemcpyAsync(&got, words, sizeof got, cudaMemcpyDeviceToHost, rt.stream());
  cudaStreamSynchronize(rt.stream());
  rt.check_device();  // raises what a kernel recorded (a wait that timed out, a bad argument)
  const int prev = (rt.rank() + rt.size() - 1) % rt.size();
  std::printf("rank %d got %llu from rank %d\n", rt.rank(), static_cast<unsigned long long>(got), prev);
  rt.barrier_all();
  rt.free(words);
  return got == 1000u + static_cast<unsigned>(prev) ? 0 : 1;
}
// example-end
