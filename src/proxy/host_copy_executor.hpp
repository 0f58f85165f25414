#pragma once
// Executes descriptors with CPU loads, stores and atomics on heaps mapped into this process (host-
// memory PEs of one node). Every entry completes before start() returns: data with plain copies,
// then the signal with a release store or an acq_rel fetch-add, so whoever acquires the signal sees
// the data. Atomics use std::atomic_ref on the mapped word.
#include <vector>

#include "executor.hpp"

namespace gpucomm::proxy {

class HostCopyExecutor final : public Executor {
 public:
  // `user_bases[pe]`: pe's user part as mapped here (nullptr: not mapped, start() faults).
  explicit HostCopyExecutor(std::vector<char*> user_bases) : bases_(std::move(user_bases)) {}
  const char* name() const override { return "host-copy"; }
  void start(const Descriptor& d, uint64_t* done) override;

 private:
  char* at(int pe, int64_t off) const;
  std::vector<char*> bases_;
};

}  // namespace gpucomm::proxy
