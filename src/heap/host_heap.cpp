#include "host_heap.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpucomm/core/error.hpp"
#include "gpucomm/heap/fd_exchange.hpp"

namespace gpucomm::heap {

HostHeap::HostHeap(bootstrap::Bootstrap& b, const std::vector<int>& node_of, size_t user_bytes,
                   const std::string& job_tag) {
  const int me = b.rank(), n = b.size();
  GPUCOMM_CHECK_ARG(user_bytes > 0 && user_bytes <= (size_t(1) << 44), "HostHeap", "GPUCOMM_HEAP_SIZE",
                    std::to_string(user_bytes) + " bytes is not a usable heap size");
  user_bytes = (user_bytes + 4095) & ~size_t(4095);
  region_bytes_ = kControlBytes + user_bytes;

  int fd = ::memfd_create("gpucomm-heap", MFD_CLOEXEC);
  if (fd < 0) raise_errno("memfd_create", errno, "host heap");
  if (::ftruncate(fd, static_cast<off_t>(region_bytes_)) != 0) {
    int e = errno;
    ::close(fd);
    raise_errno("ftruncate", e, "host heap of " + std::to_string(region_bytes_) + " bytes");
  }
  std::vector<int> local;
  for (int r = 0; r < n; ++r)
    if (node_of[static_cast<size_t>(r)] == node_of[static_cast<size_t>(me)]) local.push_back(r);
  auto fds = exchange_fds(b, local, {fd}, job_tag + "-hostheap");
  ::close(fd);

  mappings_.assign(static_cast<size_t>(n), nullptr);
  controls_.assign(static_cast<size_t>(n), nullptr);
  peer_bases_.assign(static_cast<size_t>(n), nullptr);
  std::string error;
  for (size_t i = 0; i < local.size(); ++i) {
    int r = local[i];
    void* p = ::mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i][0], 0);
    ::close(fds[i][0]);
    if (p == MAP_FAILED) {
      error = "mmap of rank " + std::to_string(r) + "'s heap: " + std::strerror(errno);
      continue;
    }
    mappings_[static_cast<size_t>(r)] = static_cast<char*>(p);
    controls_[static_cast<size_t>(r)] = static_cast<HostControlBlock*>(p);
    peer_bases_[static_cast<size_t>(r)] = static_cast<char*>(p) + kControlBytes;
  }
  if (!error.empty()) raise(Errc::system, "HostHeap", error);
  controls_[static_cast<size_t>(me)]->magic = HostControlBlock::kMagic;
  base_ = peer_bases_[static_cast<size_t>(me)];
  size_ = user_bytes;
  b.barrier();
}

HostHeap::~HostHeap() {
  for (char* m : mappings_)
    if (m) ::munmap(m, region_bytes_);
}

}  // namespace gpucomm::heap
