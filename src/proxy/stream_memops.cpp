#include "stream_memops.hpp"

#include <cuda_runtime_api.h>

#include <mutex>

namespace gpucomm::proxy {

BatchMemOpFn batch_mem_op() {
  static BatchMemOpFn fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    // Version 12000 selects the current (v2) form of the call.
    if (cudaGetDriverEntryPointByVersion("cuStreamBatchMemOp", &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<BatchMemOpFn>(p);
    } else {
      (void)cudaGetLastError();
    }
  });
  return fn;
}

}  // namespace gpucomm::proxy
