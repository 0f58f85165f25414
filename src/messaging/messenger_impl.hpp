#pragma once
// What a Messenger holds: the sizes, the symmetric-heap allocation of the remote-visible regions,
// the local tables (process memory on host-memory PEs, device memory on GPU PEs), the StateView
// over both, and the backend that runs the protocol for host-called operations.
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpucomm/messaging/messenger.hpp"
#include "host_backend.hpp"
#include "op_list.hpp"

namespace gpucomm::msg {

struct Messenger::Impl {
  Runtime& rt;
  Config cfg{};
  bool gpu = false;
  char* heap = nullptr;  // symmetric: rings, credit words, request words, staging
  size_t heap_bytes = 0;
  char* local = nullptr;  // local tables
  size_t local_bytes = 0;
  StateView view{};           // pointers where the state lives (device pointers on GPU PEs)
  Diag* diag_host = nullptr;  // GPU PEs: the failure record in host-mapped memory
  std::vector<char*> direct;  // per PE: its heap mapped here when the route is direct
  uint64_t timeout_ns = 0;
  std::unique_ptr<detail::HostBackend> host;  // host-memory PEs
  std::mutex mu;                              // communicator creation, events
  uint64_t ctx_used = 0;                      // context ids held by live communicators
  std::map<std::string, uint64_t> comm_seq;   // communicators created per member list
  std::vector<uint64_t*> events;              // counters handed out by make_event
  // GPU PEs: host-called operations run as a kernel on `stream`; results come back through
  // host-mapped memory; host-memory user buffers of blocking calls go through `staging[0]` (and a
  // sendrecv's receive buffer through `staging[1]`).
  Stream stream = nullptr;
  uint64_t* out_host = nullptr;
  uint64_t* out_dev = nullptr;
  Status* status_host = nullptr;
  Status* status_dev = nullptr;
  void* staging[2] = {nullptr, nullptr};
  size_t staging_bytes[2] = {0, 0};
  // The open group (group_start .. group_end).
  bool in_group = false;
  std::vector<detail::Op> group;

  explicit Impl(Runtime& r) : rt(r) {}
  ~Impl();

  // Runs a protocol call on the host backend; an error that escapes releases the progress lock
  // if this thread held it.
  template <class F>
  auto on_host(const char* op, F&& f) {
    if (!host) need_host(op);
    try {
      return f(*host);
    } catch (...) {
      host->release_if_held();
      throw;
    }
  }
  [[noreturn]] void need_host(const char* op) const;

  // Runs an operation list: host-memory PEs with the host backend, GPU PEs as a kernel on
  // `stream` (the Messenger's own when null); `sync` waits for it and raises a kernel's failure.
  void run(detail::OpList& list, Stream on, bool sync, const char* op);
  // GPU PEs: a device-accessible address for `n` bytes of `buf` (host memory is staged: copied in
  // when `in`, into staging buffer `slot`), and the copy back out after a receive.
  void* device_view(const void* buf, size_t n, bool in, const char* op, const char* arg, int slot = 0);
  void staged_out(void* buf, const void* dev, size_t n) const;
  bool device_accessible(const void* p) const;

  // Local memory of the state (host or device).
  void copy_to_state(void* dst, const void* src, size_t n) const;
  void copy_from_state(void* dst, const void* src, size_t n) const;
};

struct Comm::State {
  Messenger* m = nullptr;
  Team team;
  int32_t ctx = -1;
  Mode mode = Mode::mpi;
  uint32_t flags = 0;
  ~State();
};

namespace detail {
// Logs an error a destructor caught (`where`: what was being torn down); at debug level once the
// job failed, since the teardown's errors then only repeat the failure, whose message came first.
void log_teardown_error(const Runtime& rt, const std::string& where, const std::exception& e);
}  // namespace detail

}  // namespace gpucomm::msg
