#include "cuda_driver.hpp"

#include <cuda_runtime_api.h>

#include <mutex>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm {
namespace {

template <class F>
void load(F& fn, const char* name, std::string& missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || p == nullptr) {
    (void)cudaGetLastError();
    if (!missing.empty()) missing += ", ";
    missing += name;
    return;
  }
  fn = reinterpret_cast<F>(p);
}

}  // namespace

const CudaDriver& cuda_driver() {
  static CudaDriver d;
  static std::string missing;
  static std::once_flag once;
  std::call_once(once, [] {
    load(d.mem_get_allocation_granularity, "cuMemGetAllocationGranularity", missing);
    load(d.mem_create, "cuMemCreate", missing);
    load(d.mem_release, "cuMemRelease", missing);
    load(d.mem_export, "cuMemExportToShareableHandle", missing);
    load(d.mem_import, "cuMemImportFromShareableHandle", missing);
    load(d.mem_address_reserve, "cuMemAddressReserve", missing);
    load(d.mem_address_free, "cuMemAddressFree", missing);
    load(d.mem_map, "cuMemMap", missing);
    load(d.mem_unmap, "cuMemUnmap", missing);
    load(d.mem_set_access, "cuMemSetAccess", missing);
    load(d.device_get_attribute, "cuDeviceGetAttribute", missing);
    load(d.device_get, "cuDeviceGet", missing);
    load(d.mem_get_address_range, "cuMemGetAddressRange", missing);
    load(d.get_error_string, "cuGetErrorString", missing);
  });
  if (!missing.empty()) raise(Errc::unsupported, "CUDA driver", "entry points not available: " + missing);
  return d;
}

void check_cu(CUresult r, const char* call, const std::string& detail) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (cuda_driver().get_error_string) cuda_driver().get_error_string(r, &text);
  raise(Errc::cuda, call, detail + ": " + (text ? text : "error " + std::to_string(static_cast<int>(r))));
}

std::string cuda_error_text(int e) {
  auto err = static_cast<cudaError_t>(e);
  return std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
}

void check_cuda(int e, const char* call, const std::string& detail) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  raise(Errc::cuda, call, (detail.empty() ? std::string() : detail + ": ") + cuda_error_text(e));
}

void check_last_launch(const std::string& what) {
  check_cuda(cudaGetLastError(), "kernel launch", what);
}

}  // namespace gpucomm
