#pragma once
// The pattern layer's kernels (kernels.cu; builds without CUDA kernels get kernels_none.cpp,
// whose launchers return cudaErrorNotSupported):
// - the fused pack-and-put copy: many boxes (strided or contiguous, any mix of local, peer and
//   mapped host addresses) in one launch, each thread moving aligned units of up to 16 bytes;
// - the sync kernel of a phase boundary: it fences, stores the launch's epoch into the slots it
//   signals (release, system scope) and waits until its own slots reach the epoch.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpucomm/base/handle.hpp"

namespace gpucomm::patterns::detail {

inline constexpr int kMaxFusedItems = 40;  // keeps a batch under 4 KB of kernel parameters

struct FusedItem {
  const char* src;
  char* dst;
  uint64_t width, rows, planes;
  uint64_t src_pitch, src_plane_pitch, dst_pitch, dst_plane_pitch;
  uint64_t first_unit;  // units of the items before this one
  uint32_t unit_shift;  // log2 of the bytes each thread moves at once (0..4)
  uint32_t pad;
};

struct FusedBatch {
  uint32_t count;
  uint32_t pad;
  uint64_t total_units;
  FusedItem items[kMaxFusedItems];
};
static_assert(sizeof(FusedBatch) <= 4000);

// The largest power of two up to 16 that divides the width, the pitches and both addresses.
uint32_t unit_shift(const FusedItem& it);
// Appends a box copy to the batch (the batch must have room).
void add_item(FusedBatch& b, FusedItem it);

// A signal (pe: the target) or a wait (pe: the PE that signals) of a sync kernel.
struct SyncOp {
  int32_t pe;
  uint32_t slot;
};

bool kernels_built();
// Loads the kernels now (see gpucomm's note on CUDA lazy loading in docs/PROXY.md).
cudaError_t preload_kernels();
cudaError_t launch_fused(const FusedBatch& b, int max_blocks, cudaStream_t s);
// ops: device array, signals first, then waits. epoch: device word; bump: this kernel starts a
// launch (adds one to it first).
cudaError_t launch_sync(const DeviceHandle& h, const SyncOp* ops, uint32_t signals, uint32_t waits,
                        uint64_t* sync_block, uint64_t* epoch, bool bump, cudaStream_t s);

}  // namespace gpucomm::patterns::detail
