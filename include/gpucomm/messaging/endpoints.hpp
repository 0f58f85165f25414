#pragma once
// Endpoints, host side (docs/MESSAGING.md, "Endpoints"): the messaging fast lane. Created
// collectively over the world; every PE gets `endpoints` receive endpoints, each owned by one
// group at a time, which any thread of any PE sends tagged messages of up to `max_bytes` to.
// GPU kernels use gpucomm/messaging/endpoints_device.cuh with device(); host-memory PEs use the
// calls below (send from any thread, receive through an Owner on one thread).
//
// Endpoints need a load/store route to every PE (one node: NVLink or PCIe peer access between GPU
// PEs, shared memory between host PEs); a job without one is refused at creation, naming the PE.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gpucomm/messaging/endpoints_layout.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::msg {

struct EndpointsOptions {
  int endpoints = 4;   // per PE, 1..1024
  int slots = 32;      // ring slots per (endpoint, sender PE): a power of two in 2..64
  int max_bytes = 64;  // largest message, a multiple of 4 in 4..1024
};

class Endpoints {
 public:
  class Owner;

  // Collective over the world; every PE passes the same options (checked).
  Endpoints(Runtime& rt, const EndpointsOptions& opts = {});
  ~Endpoints();  // collective
  Endpoints(const Endpoints&) = delete;
  Endpoints& operator=(const Endpoints&) = delete;

  const ep::Layout& layout() const;
  size_t region_bytes() const;  // symmetric heap bytes per PE

  // GPU PEs: the handle kernels receive by value.
  ep::EndpointsHandle device() const;
  // GPU PEs: raises gpucomm::Error with the first failure a kernel recorded (who, what, which
  // endpoint, expected and seen); nothing when none did.
  void check_device() const;

  // Host-memory PEs. send: any thread; returns when the record is written.
  void send(int pe, int ep, int tag, const void* buf, size_t bytes);
  // Takes ownership of endpoint `ep` for the calling thread (one owner at a time).
  std::unique_ptr<Owner> own(int ep);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The owner of one endpoint on a host-memory PE: receives, tests, waits and probes, from one
// thread at a time. The destructor gives the endpoint back (close()); receives must be waited for.
class Endpoints::Owner {
 public:
  ~Owner();
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;

  int endpoint() const;
  // src: a PE or ep::kAnySource; tag >= 0 or ep::kAnyTag.
  uint16_t irecv(void* buf, size_t capacity, int src, int tag);
  bool test(uint16_t id, ep::Status* status = nullptr);
  ep::Status wait(uint16_t id);
  // Waits for ids[0 .. n-1] (each named once) in order; their statuses into statuses (may be null).
  void waitall(const uint16_t* ids, size_t n, ep::Status* statuses = nullptr);
  ep::Status recv(void* buf, size_t capacity, int src, int tag);
  // A receive no message matched yet completes with error kErrCancelled.
  void cancel(uint16_t id);
  bool iprobe(int src, int tag, ep::Status* status = nullptr);
  ep::Status probe(int src, int tag);
  uint32_t progress();
  void close();

 private:
  friend class Endpoints;
  struct State;
  Owner(const Endpoints::Impl& eps, int ep);
  const Endpoints::Impl* eps_;
  std::unique_ptr<State> st_;
};

namespace ep {
// Text of a failure (the host API's exceptions, the device record).
std::string describe_failure(uint32_t fail, int rank, int peer, int ep, uint64_t expected, uint64_t seen,
                             uint64_t elapsed_ns);
}  // namespace ep

}  // namespace gpucomm::msg
