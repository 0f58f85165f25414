#pragma once
#include <string>

namespace gpucomm::detail {

// Picks the PE kind from `mode` ("auto", "gpu", "host") and the GPUs present, and the device
// (GPUCOMM_DEVICE_ID or local rank modulo the count). Returns -1 for a host-memory PE.
int select_device(const std::string& mode, int local_rank);
// Makes `device` current and creates its context; raises Errc::cuda naming the device.
void activate_device(int device);

}  // namespace gpucomm::detail
