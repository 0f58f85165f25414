#include "host_memory.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "gpucomm/core/cuda_check.hpp"

namespace gpucomm::patterns::detail {

HostMemory classify_host(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return HostMemory::pageable;
  }
  switch (a.type) {
    case cudaMemoryTypeHost:
      return HostMemory::pinned;
    case cudaMemoryTypeDevice:
      return HostMemory::device;
    case cudaMemoryTypeManaged:
      return HostMemory::managed;
    case cudaMemoryTypeUnregistered:
      break;
  }
  return HostMemory::pageable;
}

namespace {

// Page ranges this process registered, by start: [start, end) and how many plans use them.
struct Registry {
  struct Entry {
    uintptr_t end;
    int refs;
  };
  std::mutex mu;
  std::map<uintptr_t, Entry> ranges;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: plans may outlive static destruction order
  return *r;
}

void release(const std::vector<uintptr_t>& starts) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (uintptr_t s : starts) {
    auto it = r.ranges.find(s);
    if (it == r.ranges.end() || --it->second.refs > 0) continue;
    (void)cudaHostUnregister(reinterpret_cast<void*>(s));
    (void)cudaGetLastError();
    r.ranges.erase(it);
  }
}

}  // namespace

std::shared_ptr<void> pin(const void* p, size_t bytes, std::string* error) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page;
  Registry& r = registry();
  std::vector<uintptr_t> held;
  std::lock_guard<std::mutex> lock(r.mu);
  // Reference the ranges already registered inside [lo, hi), register the gaps between them.
  uintptr_t at = lo;
  auto it = r.ranges.upper_bound(lo);
  if (it != r.ranges.begin() && std::prev(it)->second.end > lo) --it;
  auto register_gap = [&](uintptr_t a, uintptr_t b) {
    if (b <= a) return true;
    cudaError_t e =
        cudaHostRegister(reinterpret_cast<void*>(a), b - a, cudaHostRegisterPortable | cudaHostRegisterMapped);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {  // pinned by someone else: usable as it is
      (void)cudaGetLastError();
      return true;
    }
    if (e != cudaSuccess) {
      if (error) *error = "cudaHostRegister: " + cuda_error_text(e);
      (void)cudaGetLastError();
      return false;
    }
    r.ranges.emplace(a, Registry::Entry{b, 1});
    held.push_back(a);
    return true;
  };
  bool ok = true;
  for (; ok && it != r.ranges.end() && it->first < hi; ++it) {
    ok = register_gap(at, it->first);
    ++it->second.refs;
    held.push_back(it->first);
    at = std::max(at, it->second.end);
  }
  if (ok) ok = register_gap(at, hi);
  if (!ok) {
    // Undo: drop the references taken above (registrations made here go with them).
    for (uintptr_t s : held) {
      auto e = r.ranges.find(s);
      if (e != r.ranges.end() && --e->second.refs == 0) {
        (void)cudaHostUnregister(reinterpret_cast<void*>(s));
        (void)cudaGetLastError();
        r.ranges.erase(e);
      }
    }
    return nullptr;
  }
  return std::shared_ptr<void>(new int(0), [held](void* x) {
    release(held);
    delete static_cast<int*>(x);
  });
}

}  // namespace gpucomm::patterns::detail
