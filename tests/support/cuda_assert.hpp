#pragma once
// The GoogleTest assertion of the GPU tests for CUDA runtime calls: a failure names the call and
// the CUDA error.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#define CUDA_OK(call)                                                      \
  do {                                                                     \
    const cudaError_t e_ = (call);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)
