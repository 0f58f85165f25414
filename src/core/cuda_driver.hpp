#pragma once
// The few CUDA driver functions gpucomm needs (virtual memory management), reached through
// cudaGetDriverEntryPointByVersion so that libgpucomm never links libcuda.
#include <cuda.h>

#include <string>

#include "gpucomm/core/cuda_check.hpp"

namespace gpucomm {

struct CudaDriver {
  decltype(&::cuMemGetAllocationGranularity) mem_get_allocation_granularity = nullptr;
  decltype(&::cuMemCreate) mem_create = nullptr;
  decltype(&::cuMemRelease) mem_release = nullptr;
  decltype(&::cuMemExportToShareableHandle) mem_export = nullptr;
  decltype(&::cuMemImportFromShareableHandle) mem_import = nullptr;
  decltype(&::cuMemAddressReserve) mem_address_reserve = nullptr;
  decltype(&::cuMemAddressFree) mem_address_free = nullptr;
  decltype(&::cuMemMap) mem_map = nullptr;
  decltype(&::cuMemUnmap) mem_unmap = nullptr;
  decltype(&::cuMemSetAccess) mem_set_access = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuMemGetAddressRange) mem_get_address_range = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
};

// The loaded table; raises Errc::unsupported (naming the missing function) when the driver is
// too old or absent.
const CudaDriver& cuda_driver();
// Raises Errc::cuda with the driver's error text when r is not CUDA_SUCCESS.
void check_cu(CUresult r, const char* call, const std::string& detail);

}  // namespace gpucomm
