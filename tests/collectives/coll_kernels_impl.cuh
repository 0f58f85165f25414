#pragma once
// The test kernels of the in-kernel collectives (included by coll_kernels_<type>.cu only).
#include "coll_kernels.cuh"
#include "gpucomm/collectives/collectives_device.cuh"

namespace coll_check {

// One kernel per element type, cooperation level and operation (a kernel holding every level and
// operation is too large for ptxas to handle in bounded memory).
template <class T, Level L, CollOp Op>
__global__ void k_collective(DeviceHandle h, CollHandle ch, const T* send, T* recv, size_t count, RedOp red, int root,
                             Algorithm a) {
  auto body = [&](auto c) {
    if constexpr (Op == CollOp::barrier) {
      coll::device::barrier(c, h, ch, a);
    } else if constexpr (Op == CollOp::broadcast) {
      coll::device::broadcast(c, h, ch, send, recv, count, root, a);
    } else if constexpr (Op == CollOp::reduce) {
      coll::device::reduce(c, h, ch, send, recv, count, red, root, a);
    } else if constexpr (Op == CollOp::allreduce) {
      coll::device::allreduce(c, h, ch, send, recv, count, red, a);
    } else if constexpr (Op == CollOp::allgather) {
      coll::device::allgather(c, h, ch, send, recv, count, a);
    } else if constexpr (Op == CollOp::reduce_scatter) {
      coll::device::reduce_scatter(c, h, ch, send, recv, count, red, a);
    } else if constexpr (Op == CollOp::alltoall) {
      coll::device::alltoall(c, h, ch, send, recv, count, a);
    }
  };
  if constexpr (L == Level::warp) {
    if (blockIdx.x == 0 && threadIdx.x < 32) body(coop::Warp{});
  } else if constexpr (L == Level::block) {
    if (blockIdx.x == 0) body(coop::Block{});
  } else {
    body(Grid{});
  }
}

template <class T>
using CollKernel = void (*)(DeviceHandle, CollHandle, const T*, T*, size_t, RedOp, int, Algorithm);

template <class T, Level L>
CollKernel<T> kernel_of(CollOp op) {
  switch (op) {
    case CollOp::barrier:
      return k_collective<T, L, CollOp::barrier>;
    case CollOp::broadcast:
      return k_collective<T, L, CollOp::broadcast>;
    case CollOp::reduce:
      return k_collective<T, L, CollOp::reduce>;
    case CollOp::allreduce:
      return k_collective<T, L, CollOp::allreduce>;
    case CollOp::allgather:
      return k_collective<T, L, CollOp::allgather>;
    case CollOp::reduce_scatter:
      return k_collective<T, L, CollOp::reduce_scatter>;
    default:
      return k_collective<T, L, CollOp::alltoall>;
  }
}

template <class T, Level... Levels>
void launch_level_t(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send, void* recv,
                    size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s) {
  const auto* sp = static_cast<const T*>(send);
  auto* rp = static_cast<T*>(recv);
  bool launched = false;
  auto one = [&](auto lv) {
    constexpr Level L = decltype(lv)::value;
    if (level != L || launched) return;
    launched = true;
    if constexpr (L == Level::grid) {
      launch_grid(kernel_of<T, Level::grid>(op), blocks, 256, 0, s, h, ch, sp, rp, count, red, root, a);
    } else {
      kernel_of<T, L>(op)<<<1, L == Level::warp ? 32 : 256, 0, s>>>(h, ch, sp, rp, count, red, root, a);
      DeviceMem::check(cudaGetLastError(), "launching k_collective");
    }
  };
  (one(std::integral_constant<Level, Levels>{}), ...);
  if (!launched) throw std::runtime_error(std::string("no test kernel for level ") + level_name(level));
}

// f32 has a kernel set per level, each in its own object (coll_kernels_f32_<level>.cu).
void launch_level_f32_warp(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send,
                           void* recv, size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s);
void launch_level_f32_block(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send,
                            void* recv, size_t count, RedOp red, int root, Algorithm a, unsigned blocks,
                            cudaStream_t s);

}  // namespace coll_check
