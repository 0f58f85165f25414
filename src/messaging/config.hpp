#pragma once
// The messaging sizes (docs/MESSAGING.md, "Memory per PE"): read from MessengerOptions and the
// GPUCOMM_MSG_* variables, checked, and laid out into the symmetric-heap and local regions.
#include <cstddef>
#include <string>

#include "gpucomm/messaging/layout.hpp"
#include "gpucomm/messaging/messenger.hpp"

namespace gpucomm::msg::detail {

// Options first, then the environment, then the defaults; raises Errc::invalid_argument naming
// the option or variable when a value is out of range.
Config make_config(const MessengerOptions& opts, int npes, int rank);
// The sizes as text, for the consensus check across PEs and for messages.
std::string describe_config(const Config& c);

// Byte offsets of the regions inside the two allocations.
struct HeapLayout {
  size_t rings, credits, req_words, am_credits, staging, total;
};
struct LocalLayout {
  size_t peers, pool, reqs, req_bits, comps, unexp, unexp_bits, umq_links, posts, fast, home, bins, bin_next, active,
      comms, am, am_bits, am_fifo, ctl, diag, total;
};
HeapLayout heap_layout(const Config& c);
LocalLayout local_layout(const Config& c);

// The StateView of regions at `heap` (this PE's symmetric address) and `local`; the failure record
// is in `local` too (GPU PEs move it to host-mapped memory afterwards).
StateView carve(const Config& c, char* heap, char* local);
// The initial contents of the bin chunks' free list (every chunk free, in order): bin_next and the
// holder word home::kChunkFree.
void init_bins(const Config& c, uint32_t* bin_next, uint64_t* chunk_free);

}  // namespace gpucomm::msg::detail
