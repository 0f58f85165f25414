#pragma once
// Stream memory operations of the CUDA driver (cuStreamBatchMemOp: 32- and 64-bit writes and
// memory barriers executed in stream order by the GPU's front end, no kernel, no copy), reached
// through cudaGetDriverEntryPointByVersion as src/core/cuda_driver.cpp does, so that libgpucomm
// never links libcuda.
#include <cuda.h>

namespace gpucomm::proxy {

using BatchMemOpFn = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);

// The driver's cuStreamBatchMemOp, or null when the driver does not offer it.
BatchMemOpFn batch_mem_op();

// Most operations one cuStreamBatchMemOp call takes ("less than 256").
inline constexpr unsigned kMaxMemOps = 255;

inline CUstreamBatchMemOpParams write_op(uint64_t address, uint64_t value, bool wide) {
  CUstreamBatchMemOpParams p{};
  p.writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
  p.writeValue.address = static_cast<CUdeviceptr>(address);
  if (wide) {
    p.writeValue.value64 = value;
  } else {
    p.writeValue.value = static_cast<cuuint32_t>(value);
  }
  p.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  return p;
}

// A memory barrier: what the stream did before is visible before what follows - to the whole
// system, or (this_gpu) to the threads of this GPU only, which is enough when they alone read it.
inline CUstreamBatchMemOpParams barrier_op(bool this_gpu = false) {
  CUstreamBatchMemOpParams p{};
  p.memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  p.memoryBarrier.flags = this_gpu ? CU_STREAM_MEMORY_BARRIER_TYPE_GPU : CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
  return p;
}

}  // namespace gpucomm::proxy
