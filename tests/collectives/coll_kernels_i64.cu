// Test kernels of the in-kernel collectives for int64_t (see coll_kernels.cuh).
#include "coll_kernels_impl.cuh"

namespace coll_check {

void launch_level_i64(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send, void* recv,
                      size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s) {
  launch_level_t<int64_t, Level::block>(level, h, ch, op, send, recv, count, red, root, a, blocks, s);
}

}  // namespace coll_check
