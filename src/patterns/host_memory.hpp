#pragma once
// Host memory on GPU PEs: pinned memory is detected (cudaPointerGetAttributes); pageable memory
// is registered with cudaHostRegister for as long as some plan needs it (a process-wide,
// reference-counted table of registered page ranges, so plans that share an array share the
// registration), or staged through pinned buffers by the executor.
#include <cstddef>
#include <memory>
#include <string>

namespace gpucomm::patterns::detail {

enum class HostMemory { pinned, pageable, device, managed };
// What memory `p` is (device: a GPU's memory passed as host memory).
HostMemory classify_host(const void* p);

// Keeps [p, p + bytes) registered while the handle lives. nullptr (and `error` set) when
// cudaHostRegister failed.
std::shared_ptr<void> pin(const void* p, size_t bytes, std::string* error);

}  // namespace gpucomm::patterns::detail
