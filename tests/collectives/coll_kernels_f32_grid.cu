// Test kernels of the in-kernel collectives for float at grid level, and the f32 entry point (see
// coll_kernels.cuh).
#include "coll_kernels_impl.cuh"

namespace coll_check {

void launch_level_f32(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send, void* recv,
                      size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s) {
  if (level == Level::warp) {
    launch_level_f32_warp(level, h, ch, op, send, recv, count, red, root, a, blocks, s);
  } else if (level == Level::block) {
    launch_level_f32_block(level, h, ch, op, send, recv, count, red, root, a, blocks, s);
  } else {
    launch_level_t<float, Level::grid>(level, h, ch, op, send, recv, count, red, root, a, blocks, s);
  }
}

void launch_grid_barrier_f32(unsigned blocks, const DeviceHandle& h, const CollHandle& ch) {
  launch_grid(k_collective<float, Level::grid, CollOp::barrier>, blocks, 256, 0, nullptr, h, ch,
              static_cast<const float*>(nullptr), static_cast<float*>(nullptr), size_t{0}, RedOp::sum, -1,
              Algorithm::automatic);
}

}  // namespace coll_check
