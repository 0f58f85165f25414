// Test kernels of the in-kernel collectives for float at block level (see coll_kernels.cuh).
#include "coll_kernels_impl.cuh"

namespace coll_check {

void launch_level_f32_block(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send,
                            void* recv, size_t count, RedOp red, int root, Algorithm a, unsigned blocks,
                            cudaStream_t s) {
  launch_level_t<float, Level::block>(level, h, ch, op, send, recv, count, red, root, a, blocks, s);
}

}  // namespace coll_check
