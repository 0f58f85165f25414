#pragma once
// The symmetric heap registered with UCX (ucp_mem_map) and the peers' unpacked remote keys.
#include <ucp/api/ucp.h>

#include <cstddef>
#include <string>
#include <utility>

namespace gpucomm::transport::ucx {

class HeapRegistration {
 public:
  // Registers [base, base + bytes); `on_device`: CUDA device memory. bytes == 0 registers nothing.
  HeapRegistration(ucp_context_h context, void* base, size_t bytes, bool on_device);
  ~HeapRegistration();
  HeapRegistration(const HeapRegistration&) = delete;
  HeapRegistration& operator=(const HeapRegistration&) = delete;
  // The remote key peers unpack to reach this heap ("" when nothing is registered).
  const std::string& packed_rkey() const { return rkey_; }

 private:
  ucp_context_h context_;
  ucp_mem_h memh_ = nullptr;
  std::string rkey_;
};

// A peer's remote key, unpacked on the endpoint to that peer. Destroy before the endpoint.
class RemoteKey {
 public:
  RemoteKey() = default;
  RemoteKey(ucp_ep_h ep, const std::string& packed, int pe);
  ~RemoteKey() { reset(); }
  RemoteKey(const RemoteKey&) = delete;
  RemoteKey& operator=(const RemoteKey&) = delete;
  RemoteKey(RemoteKey&& o) noexcept : rkey_(std::exchange(o.rkey_, nullptr)) {}
  RemoteKey& operator=(RemoteKey&& o) noexcept;
  ucp_rkey_h get() const { return rkey_; }
  void reset();

 private:
  ucp_rkey_h rkey_ = nullptr;
};

}  // namespace gpucomm::transport::ucx
