// Filling a fused batch on the host (kernels.hpp).
#include <cstdint>

#include "gpucomm/core/error.hpp"
#include "kernels.hpp"

namespace gpucomm::patterns::detail {

uint32_t unit_shift(const FusedItem& it) {
  uint64_t bits = it.width | reinterpret_cast<uintptr_t>(it.src) | reinterpret_cast<uintptr_t>(it.dst);
  if (it.rows > 1) bits |= it.src_pitch | it.dst_pitch;
  if (it.planes > 1) bits |= it.src_plane_pitch | it.dst_plane_pitch;
  uint32_t sh = 0;
  while (sh < 4 && (bits & ((uint64_t{2} << sh) - 1)) == 0) ++sh;
  return sh;
}

void add_item(FusedBatch& b, FusedItem it) {
  if (b.count >= static_cast<uint32_t>(kMaxFusedItems)) raise(Errc::internal, "patterns", "fused batch is full");
  it.unit_shift = unit_shift(it);
  it.first_unit = b.total_units;
  b.total_units += (it.width >> it.unit_shift) * it.rows * it.planes;
  b.items[b.count++] = it;
}

}  // namespace gpucomm::patterns::detail
