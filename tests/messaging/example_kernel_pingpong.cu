// The device-messaging example of docs/MESSAGING.md ("A complete kernel"), compiled by the build
// and run as a GPU test (msg_example_kernel): the documentation shows this file's code.
// example-begin
#include <cuda_runtime.h>

#include <cstdio>

#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/messaging_device.cuh"
#include "gpucomm/messaging/messenger.hpp"

using namespace gpucomm;

// Block 0 sends `rounds` tagged messages to block 1 of the same PE (rank 0 to rank 0) and waits
// for each echo; block 1 receives each one and sends it back. Thread level for the ping (one
// thread of block 0 calls), block level for the echo (every thread of block 1 calls).
__global__ void ping_pong(msg::CommHandle comm, double* ping, double* pong, int rounds, int* errors) {
  if (blockIdx.x == 0) {
    if (threadIdx.x != 0) return;
    const coop::Thread me{};
    for (int i = 0; i < rounds; ++i) {
      ping[0] = i;
      msg::Request r = msg::irecv(me, comm, pong, sizeof(double), 0, 2);  // the echo, tag 2
      msg::send(me, comm, ping, sizeof(double), 0, 1);                    // the ping, tag 1
      const msg::Status st = msg::wait(me, comm, r);
      if (st.error != msg::kErrNone || st.bytes != sizeof(double) || pong[0] != i + 0.5) atomicAdd(errors, 1);
    }
  } else {
    const coop::Block block{};
    for (int i = 0; i < rounds; ++i) {
      const msg::Status st = msg::recv(block, comm, pong + 1, sizeof(double), msg::kAnySource, 1);
      if (threadIdx.x == 0) {
        if (st.source != 0 || st.tag != 1) atomicAdd(errors, 1);
        pong[1] += 0.5;
      }
      __syncthreads();  // the value written before the whole block sends it
      msg::send(block, comm, pong + 1, sizeof(double), st.source, 2);
    }
  }
}

int main() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::puts("  SKIPPED : this example needs a GPU");
    return 0;
  }
  Runtime rt;                    // one PE per process; `gpucomm run -n 1 ./example`
  msg::Messenger messenger(rt);  // collective
  msg::Comm world = messenger.world();
  auto* buf = static_cast<double*>(rt.calloc(4, sizeof(double)));  // the symmetric heap
  int* errors = nullptr;
  cudaMallocManaged(&errors, sizeof(int));
  *errors = 0;
  // Both blocks must be resident at once (they wait for each other).
  ping_pong<<<2, 128, 0, rt.stream()>>>(world.device(), buf, buf + 2, 100, errors);
  cudaStreamSynchronize(rt.stream());
  messenger.check_device();  // raises a failure a kernel recorded (a timeout, a bad argument)
  const int failed = *errors;
  std::printf("%s: %d errors in 100 round trips\n", failed == 0 ? "ok" : "FAILED", failed);
  cudaFree(errors);
  rt.free(buf);
  return failed == 0 ? 0 : 1;
}
// example-end
