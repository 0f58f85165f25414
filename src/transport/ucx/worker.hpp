#pragma once
// One UCP context and one worker per transport instance. The worker is created in SERIALIZED
// thread mode: one thread at a time calls it (the transport's owner; during teardown a helper).
#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>
#include <string>

namespace gpucomm::transport::ucx {

class Worker {
 public:
  // Reads the UCX_* configuration of the environment; `expected_peers` sizes UCX's tables.
  explicit Worker(size_t expected_peers);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_context_h context() const { return context_; }
  ucp_worker_h get() const { return worker_; }
  // The worker's address, packed by UCX, for the peers to connect to.
  const std::string& address() const { return address_; }
  unsigned progress() { return ucp_worker_progress(worker_); }

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
};

// "UCX 1.22.0 (/path/libucp.so.0)".
std::string library_description();

}  // namespace gpucomm::transport::ucx
