#pragma once
// Checks a CUDA runtime call; a failure raises gpucomm::Error(cuda) naming the call.
#include <cuda_runtime_api.h>

#include <string>

#include "gpucomm/core/error.hpp"

#define GPUCOMM_CUDA_CHECK(call)                                                                  \
  do {                                                                                            \
    cudaError_t gpucomm_err_ = (call);                                                            \
    if (gpucomm_err_ != cudaSuccess)                                                              \
      ::gpucomm::raise(::gpucomm::Errc::cuda, #call,                                              \
                       std::string(cudaGetErrorName(gpucomm_err_)) + ": " + cudaGetErrorString(gpucomm_err_)); \
  } while (0)

// After a kernel launch: raises on a launch error (bad configuration, too many resources).
#define GPUCOMM_CUDA_CHECK_LAUNCH(what)                                                           \
  do {                                                                                            \
    cudaError_t gpucomm_err_ = cudaGetLastError();                                                \
    if (gpucomm_err_ != cudaSuccess)                                                              \
      ::gpucomm::raise(::gpucomm::Errc::cuda, std::string("launch of ") + (what),                 \
                       std::string(cudaGetErrorName(gpucomm_err_)) + ": " + cudaGetErrorString(gpucomm_err_)); \
  } while (0)
