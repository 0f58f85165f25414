#pragma once
// Executes descriptors through a remote transport (UCX): puts, gets and atomics on the peers'
// registered heaps. put_signal (and put_signal_inline, whose payload is staged) is put, fence(pe), then the signal
// (set: an 8-byte put of the value, add: an atomic fetch-add), so the target performs the signal after the data.
// Entries complete when the transport reports them complete at the target (gets and fetching atomics: locally).
#include <memory>
#include <vector>

#include "executor.hpp"
#include "gpucomm/transport/transport.hpp"

namespace gpucomm::proxy {

class RemoteExecutor final : public Executor {
 public:
  // The transport registered each PE's whole region; `control_bytes` of control block precede
  // the user part, so a descriptor offset o is region offset o + control_bytes.
  RemoteExecutor(std::unique_ptr<transport::Remote> remote, int64_t control_bytes);
  const char* name() const override { return remote_->name(); }
  void start(const Descriptor& d, uint64_t* done) override;
  void progress() override;
  bool busy() const override { return !pending_.empty(); }
  bool needs_idle_progress() const override { return true; }

 private:
  uint64_t off(int64_t o) const { return static_cast<uint64_t>(o + control_bytes_); }
  int take_stage(uint64_t value);  // an 8-byte staging slot held until the entry completes
  // The signal of `d` (set: an 8-byte put of the value, add: an atomic); returns its staging slot or -1.
  int signal(const Descriptor& d, transport::Completion c);
  std::unique_ptr<transport::Remote> remote_;
  int64_t control_bytes_;
  struct Pending {
    uint64_t* done;
    int stage;    // inline staging slot held until completion, or -1
    int payload;  // put_signal_inline: the payload's slot, or -1
  };
  std::vector<Pending> pending_;
  std::vector<uint64_t> staging_;
  std::vector<int> free_stage_;
};

}  // namespace gpucomm::proxy
