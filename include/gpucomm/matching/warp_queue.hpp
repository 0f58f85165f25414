#pragma once
// A warp-parallel multi-producer multi-consumer queue (circular buffer) for GPU code. The POD
// handle is passed to kernels; the operations are in warp_queue_device.cuh; DeviceWarpQueue
// (below) owns one in global memory. The protocol is described in docs/MATCHING.md.
#include <cstddef>
#include <cstdint>

namespace gpucomm::matching {

// Where the queue lives, and so the scope of its atomics: shared memory of one block
// (cuda::thread_scope_block) or global memory (cuda::thread_scope_device).
enum class QueueScope { block, device };

// The queue's control words, each on its own 128-byte line so that producers and consumers do
// not share cache lines. All counters grow monotonically (64 bits never wrap in practice).
struct alignas(128) QueueCounter {
  unsigned long long value;
  char pad[120];
};
struct QueueControl {
  QueueCounter write_reserve;  // next ticket producers hand out
  QueueCounter read_reserve;   // next ticket consumers hand out
  QueueCounter read_commit;    // every ticket below it has been consumed; bounds producers
  QueueCounter errors;         // timeouts seen by any warp (diagnosis, not part of the protocol)
};

template <class T, QueueScope Scope>
struct WarpQueue {
  T* slots;                    // capacity elements
  unsigned long long* stamps;  // per slot: ticket + 1 once the element for that ticket is written
  QueueControl* control;
  uint32_t capacity;              // power of two, at most 2^31
  unsigned long long timeout_ns;  // bound on each wait inside an operation; 0: wait forever
};

}  // namespace gpucomm::matching
