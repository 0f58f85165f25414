// The smallest kernel that sends, receives and waits at one cooperation level (GPUCOMM_TEST_LEVEL:
// Thread, Warp or Block), compiled by report_compile.py to measure what messaging costs a caller's
// build: the compile time and the kernel's registers and static shared memory.
#include "gpucomm/messaging/messaging_device.cuh"

#ifndef GPUCOMM_TEST_LEVEL
#define GPUCOMM_TEST_LEVEL Thread
#endif

__global__ void __launch_bounds__(256) minimal_send_irecv_wait(gpucomm::msg::CommHandle comm, char* buf, int peer) {
  const gpucomm::coop::GPUCOMM_TEST_LEVEL c{};
  gpucomm::msg::Request r = gpucomm::msg::irecv(c, comm, buf + 64, 8, peer, 1);
  gpucomm::msg::send(c, comm, buf, 8, peer, 1);
  (void)gpucomm::msg::wait(c, comm, r);
}
