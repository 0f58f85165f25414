#pragma once

namespace gpucomm {

// Number of CUDA devices usable by this process: 0 without a GPU or driver (never an error).
int cuda_device_count() noexcept;

}  // namespace gpucomm
