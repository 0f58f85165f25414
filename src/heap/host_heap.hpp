#pragma once
// The host-memory symmetric heap: each PE's region is a memfd (POSIX shared memory without a
// name, so nothing is left behind if a PE dies) that the PEs of a node pass to each other over
// Unix sockets and map. Layout of each region: a control block (barrier flags) then the user
// part managed by the symmetric allocator.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/heap/symmetric_heap.hpp"

namespace gpucomm::heap {

struct HostControlBlock {
  static constexpr int kMaxTeams = 64;
  static constexpr int kMaxRounds = 32;
  static constexpr uint64_t kMagic = 0x676375636f6d6d31ULL;  // "gpucomm1"
  uint64_t magic;
  uint64_t reserved[7];
  // barrier_flags[team slot][round]: how many notifications this PE has received in that round.
  alignas(64) uint64_t barrier_flags[kMaxTeams][kMaxRounds];
};

class HostHeap final : public SymmetricHeap {
 public:
  // Collective over the world. `node_of[r]` is the node id of world rank r.
  HostHeap(bootstrap::Bootstrap& b, const std::vector<int>& node_of, size_t user_bytes, const std::string& job_tag);
  ~HostHeap() override;
  MemoryKind kind() const override { return MemoryKind::host; }

  HostControlBlock* control(int pe) const { return controls_[static_cast<size_t>(pe)]; }
  static constexpr size_t kControlBytes = (sizeof(HostControlBlock) + 4095) & ~size_t(4095);

 private:
  size_t region_bytes_ = 0;
  std::vector<char*> mappings_;  // whole regions, per PE (nullptr if not mapped)
  std::vector<HostControlBlock*> controls_;
};

}  // namespace gpucomm::heap
