// Kernels whose SASS check_ep_send_sass.py counts: an 8-byte endpoint send to another PE (a GPU peer),
// at thread and warp level, and nothing else.
#include "gpucomm/messaging/endpoints_device.cuh"

namespace ep = gpucomm::msg::ep;

__global__ void ep_send_thread(ep::EndpointsHandle h, const uint64_t* buf) {
  ep::send(gpucomm::coop::Thread{}, h, buf, 8, 1, 0, 5);
}

__global__ void ep_send_warp(ep::EndpointsHandle h, const uint64_t* buf) {
  ep::send(gpucomm::coop::Warp{}, h, buf, 8, 1, 0, 5);
}
