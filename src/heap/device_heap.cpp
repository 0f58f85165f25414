#include "device_heap.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstring>

#include "core/cuda_driver.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/heap/fd_exchange.hpp"
#include "ipc_share.hpp"

namespace gpucomm::heap {
namespace {

struct PeRecord {
  int32_t vmm_ok;  // VMM with POSIX fd handles works on this PE's device
  int32_t device;
  uint64_t granularity;
  uint64_t region_bytes;  // region size under VMM (granularity-aligned)
  char why[96];           // why not, when vmm_ok is 0
};

CUmemAllocationProp vmm_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Whether this PE can use VMM with fd handles; fills granularity or the reason.
bool probe_vmm(int device, PeRecord& rec) {
  auto why = [&](const std::string& s) {
    std::strncpy(rec.why, s.c_str(), sizeof rec.why - 1);
    return false;
  };
  const CudaDriver* d = nullptr;
  try {
    d = &cuda_driver();
  } catch (const Error& e) {
    return why(e.detail());
  }
  CUdevice dev;
  if (d->device_get(&dev, device) != CUDA_SUCCESS) return why("cuDeviceGet failed");
  int vmm = 0, fd = 0;
  d->device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  d->device_get_attribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev);
  if (!vmm) return why("the device does not support virtual memory management");
  if (!fd) return why("the device cannot export POSIX file descriptor handles");
  CUmemAllocationProp prop = vmm_prop(device);
  size_t gran = 0;
  if (d->mem_get_allocation_granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
      gran == 0)
    return why("cuMemGetAllocationGranularity failed");
  rec.granularity = gran;
  return true;
}

}  // namespace

DeviceHeap::DeviceHeap(bootstrap::Bootstrap& b, const std::vector<int>& node_of, int device, size_t control_bytes,
                       size_t user_bytes, const std::string& job_tag, const std::string& mapping)
    : device_(device), control_bytes_(control_bytes) {
  const int me = b.rank(), n = b.size();
  GPUCOMM_CHECK_ARG(user_bytes > 0 && user_bytes <= (size_t(1) << 44), "DeviceHeap", "GPUCOMM_HEAP_SIZE",
                    std::to_string(user_bytes) + " bytes is not a usable heap size");
  GPUCOMM_CHECK_ARG(mapping == "auto" || mapping == "vmm" || mapping == "ipc", "DeviceHeap", "GPUCOMM_HEAP_MAPPING",
                    "'" + mapping + "' is not vmm, ipc or auto");
  user_bytes = (user_bytes + 4095) & ~size_t(4095);
  const size_t want = control_bytes_ + user_bytes;

  PeRecord mine{};
  mine.device = device;
  mine.vmm_ok = mapping != "ipc" && probe_vmm(device, mine) ? 1 : 0;
  if (mine.vmm_ok) {
    // Create and export before the decision, so that a failure here (e.g. fd export refused
    // in a container) makes every PE fall back together instead of failing one PE.
    mine.region_bytes = (want + mine.granularity - 1) / mine.granularity * mine.granularity;
    std::string why;
    if (!create_vmm(mine.region_bytes, &why)) {
      mine.vmm_ok = 0;
      std::strncpy(mine.why, why.c_str(), sizeof mine.why - 1);
    }
  }
  auto all = b.allgather(std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
  std::vector<PeRecord> recs(static_cast<size_t>(n));
  bool all_vmm = true;
  std::string first_no;
  for (int r = 0; r < n; ++r) {
    if (all[static_cast<size_t>(r)].size() != sizeof(PeRecord))
      raise(Errc::protocol, "DeviceHeap", "malformed heap record");
    std::memcpy(&recs[static_cast<size_t>(r)], all[static_cast<size_t>(r)].data(), sizeof(PeRecord));
    if (!recs[static_cast<size_t>(r)].vmm_ok && all_vmm) {
      all_vmm = false;
      first_no =
          "rank " + std::to_string(r) + ": " +
          std::string(recs[static_cast<size_t>(r)].why, strnlen(recs[static_cast<size_t>(r)].why, sizeof mine.why));
    }
  }
  mapping_ = all_vmm ? "vmm" : "ipc";
  if (!all_vmm && own_handle_) {  // created for nothing: another PE cannot use VMM
    ::close(own_fd_);
    own_fd_ = -1;
    cuda_driver().mem_release(own_handle_);
    own_handle_ = 0;
  }
  if (mapping == "vmm" && !all_vmm)
    raise(Errc::unsupported, "DeviceHeap", "GPUCOMM_HEAP_MAPPING=vmm, but " + first_no + " (use ipc or auto)");
  if (mapping == "auto" && !all_vmm) GPUCOMM_LOG(info, "GPU heap falls back to CUDA IPC: " << first_no);

  peer_bases_.assign(static_cast<size_t>(n), nullptr);
  std::vector<int> local;
  for (int r = 0; r < n; ++r)
    if (node_of[static_cast<size_t>(r)] == node_of[static_cast<size_t>(me)]) local.push_back(r);
  try {
    if (all_vmm) {
      std::vector<size_t> sizes(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) sizes[static_cast<size_t>(r)] = recs[static_cast<size_t>(r)].region_bytes;
      region_bytes_ = sizes[static_cast<size_t>(me)];
      map_vmm(b, local, sizes, job_tag);
    } else {
      region_bytes_ = (want + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1);
      map_ipc(b, node_of);
    }
    // Zero the region (control block included) before anyone uses it.
    check_cuda(cudaMemset(own_region_, 0, region_bytes_), "cudaMemset", "zeroing the GPU heap");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", "zeroing the GPU heap");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&device_peer_bases_), sizeof(char*) * static_cast<size_t>(n)),
               "cudaMalloc", "peer table");
    check_cuda(cudaMemcpy(device_peer_bases_, peer_bases_.data(), sizeof(char*) * static_cast<size_t>(n),
                          cudaMemcpyHostToDevice),
               "cudaMemcpy", "peer table");
  } catch (...) {
    release();
    throw;
  }
  base_ = peer_bases_[static_cast<size_t>(me)];
  size_ = user_bytes;
  b.barrier();
}

bool DeviceHeap::create_vmm(size_t bytes, std::string* why) {
  const CudaDriver& d = cuda_driver();
  CUmemAllocationProp prop = vmm_prop(device_);
  CUmemGenericAllocationHandle h = 0;
  CUresult r = d.mem_create(&h, bytes, &prop, 0);
  if (r != CUDA_SUCCESS) {
    const char* text = nullptr;
    d.get_error_string(r, &text);
    *why = std::string("cuMemCreate: ") + (text ? text : "error");
    return false;
  }
  int fd = -1;
  r = d.mem_export(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != CUDA_SUCCESS) {
    const char* text = nullptr;
    d.get_error_string(r, &text);
    *why = std::string("cuMemExportToShareableHandle: ") + (text ? text : "error");
    d.mem_release(h);
    return false;
  }
  own_handle_ = h;
  own_fd_ = fd;
  return true;
}

void DeviceHeap::map_vmm(bootstrap::Bootstrap& b, const std::vector<int>& local, const std::vector<size_t>& sizes,
                         const std::string& job_tag) {
  const CudaDriver& d = cuda_driver();
  const int me = b.rank();
  const CUmemGenericAllocationHandle h = own_handle_;
  const int fd = own_fd_;
  own_fd_ = -1;
  std::vector<std::vector<int>> fds;
  try {
    fds = exchange_fds(b, local, {fd}, job_tag + "-gpuheap");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);

  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::string error;
  for (size_t i = 0; i < local.size(); ++i) {
    const int r = local[i];
    const size_t bytes = sizes[static_cast<size_t>(r)];
    VmmMapping m;
    m.bytes = bytes;
    CUmemGenericAllocationHandle ph = h;
    CUresult res = CUDA_SUCCESS;
    if (r != me) {
      res = d.mem_import(&ph, reinterpret_cast<void*>(static_cast<uintptr_t>(fds[i][0])),
                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      if (res == CUDA_SUCCESS) m.handle = ph;
    }
    ::close(fds[i][0]);
    CUdeviceptr va = 0;
    const char* step = "cuMemImportFromShareableHandle";
    if (res == CUDA_SUCCESS) {
      step = "cuMemAddressReserve";
      res = d.mem_address_reserve(&va, bytes, 0, 0, 0);
    }
    if (res == CUDA_SUCCESS) {
      m.va = va;
      step = "cuMemMap";
      res = d.mem_map(va, bytes, 0, ph, 0);
    }
    if (res == CUDA_SUCCESS) {
      step = "cuMemSetAccess";
      res = d.mem_set_access(va, bytes, &access, 1);
      if (res != CUDA_SUCCESS) d.mem_unmap(va, bytes);
    }
    if (res != CUDA_SUCCESS) {
      const char* text = nullptr;
      d.get_error_string(res, &text);
      if (m.va) d.mem_address_free(m.va, bytes);
      if (m.handle) d.mem_release(m.handle);
      std::string why = std::string(step) + ": " + (text ? text : "error");
      if (r == me) {
        error = "mapping this PE's own GPU heap failed: " + why;
      } else {
        GPUCOMM_LOG(warn, "rank " << r << "'s GPU heap cannot be mapped on device " << device_ << " (" << why
                                  << "); it is unreachable from this PE");
      }
      continue;
    }
    vmm_.push_back(m);
    peer_bases_[static_cast<size_t>(r)] = reinterpret_cast<char*>(va) + control_bytes_;
    if (r == me) own_region_ = reinterpret_cast<char*>(va);
  }
  if (!error.empty()) raise(Errc::cuda, "DeviceHeap", error);
}

void DeviceHeap::map_ipc(bootstrap::Bootstrap& b, const std::vector<int>& node_of) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, region_bytes_), "cudaMalloc",
             "GPU heap of " + std::to_string(region_bytes_) + " bytes on device " + std::to_string(device_));
  own_region_ = static_cast<char*>(p);
  ipc_ = std::make_unique<IpcShare>(b, node_of, p, region_bytes_, "GPU heap");
  for (size_t r = 0; r < peer_bases_.size(); ++r)
    if (char* a = ipc_->address(static_cast<int>(r))) peer_bases_[r] = a + control_bytes_;
}

DeviceHeap::~DeviceHeap() {
  release();
}

void DeviceHeap::release() {
  if (device_peer_bases_) (void)cudaFree(device_peer_bases_);
  device_peer_bases_ = nullptr;
  if (own_fd_ >= 0) ::close(own_fd_);
  own_fd_ = -1;
  if (!vmm_.empty() || own_handle_) {
    (void)cudaDeviceSynchronize();
    const CudaDriver& d = cuda_driver();
    for (auto& m : vmm_) {
      d.mem_unmap(m.va, m.bytes);
      d.mem_address_free(m.va, m.bytes);
      if (m.handle) d.mem_release(m.handle);
    }
    vmm_.clear();
    if (own_handle_) d.mem_release(own_handle_);
    own_handle_ = 0;
  }
  ipc_.reset();
  if (mapping_ == "ipc" && own_region_) (void)cudaFree(own_region_);
  own_region_ = nullptr;
}

}  // namespace gpucomm::heap
