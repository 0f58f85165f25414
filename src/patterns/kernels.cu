// The fused pack-and-put copy and the sync kernel of the pattern layer (kernels.hpp).
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/base/load_kernels.hpp"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/device/rma_device.cuh"
#include "kernels.hpp"

namespace gpucomm::patterns::detail {

namespace {

template <class V>
__device__ inline void move_unit(char* d, const char* s) {
  *reinterpret_cast<V*>(d) = *reinterpret_cast<const V*>(s);
}

// Thread u of the grid moves units u, u + stride, ...; items are in unit order, so a thread
// walks forward through them.
__global__ void __launch_bounds__(256) fused_copy_kernel(const __grid_constant__ FusedBatch b) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint32_t it = 0;
  for (uint64_t u = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < b.total_units; u += stride) {
    while (it + 1 < b.count && u >= b.items[it + 1].first_unit) ++it;
    const FusedItem& x = b.items[it];
    const uint32_t sh = x.unit_shift;
    const uint64_t local = u - x.first_unit;
    const uint64_t row_units = x.width >> sh;
    uint64_t col = 0, rr = local;
    if (row_units != 1) {
      col = local % row_units;
      rr = local / row_units;
    }
    uint64_t row = rr, plane = 0;
    if (x.planes != 1) {
      row = rr % x.rows;
      plane = rr / x.rows;
    }
    const char* s = x.src + plane * x.src_plane_pitch + row * x.src_pitch + (col << sh);
    char* d = x.dst + plane * x.dst_plane_pitch + row * x.dst_pitch + (col << sh);
    switch (sh) {
      case 4:
        move_unit<int4>(d, s);
        break;
      case 3:
        move_unit<uint64_t>(d, s);
        break;
      case 2:
        move_unit<uint32_t>(d, s);
        break;
      case 1:
        move_unit<uint16_t>(d, s);
        break;
      default:
        *d = *s;
        break;
    }
  }
}

// One warp. Every lane fences first (fence.sc.sys): the copies before this kernel in stream
// order - copy engines, kernels on joined streams - are not this thread's writes; the fence puts
// them ahead of the release stores below (the same rule as the runtime's signal kernels).
__global__ void sync_kernel(DeviceHandle h, const SyncOp* ops, uint32_t signals, uint32_t waits, uint64_t* sync_block,
                            uint64_t* epoch_word, int bump) {
  __shared__ uint64_t epoch;
  mem::fence<mem::kSystem>(mem::seq_cst);
  if (threadIdx.x == 0) {
    uint64_t e = mem::load<mem::kDevice>(epoch_word, mem::relaxed);
    if (bump) mem::store<mem::kDevice>(epoch_word, ++e, mem::relaxed);
    epoch = e;
  }
  __syncthreads();
  const uint64_t e = epoch;
  for (uint32_t i = threadIdx.x; i < signals; i += blockDim.x) {
    device::signal(h, sync_block + ops[i].slot, e, SignalOp::set, ops[i].pe);
  }
  for (uint32_t i = threadIdx.x; i < waits; i += blockDim.x) {
    const SyncOp w = ops[signals + i];
    gpucomm::detail::wait(h, sync_block + w.slot, Cmp::ge, e, DeviceOp::signal_wait_until, w.pe);
  }
}

}  // namespace

bool kernels_built() {
  return true;
}

cudaError_t preload_kernels() {
  return load_kernels(fused_copy_kernel, sync_kernel);
}

cudaError_t launch_fused(const FusedBatch& b, int max_blocks, cudaStream_t s) {
  if (b.total_units == 0) return cudaSuccess;
  const uint64_t want = (b.total_units + 255) / 256;
  const int blocks = static_cast<int>(want < static_cast<uint64_t>(max_blocks) ? want : max_blocks);
  fused_copy_kernel<<<blocks, 256, 0, s>>>(b);
  return cudaGetLastError();
}

cudaError_t launch_sync(const DeviceHandle& h, const SyncOp* ops, uint32_t signals, uint32_t waits,
                        uint64_t* sync_block, uint64_t* epoch, bool bump, cudaStream_t s) {
  sync_kernel<<<1, 32, 0, s>>>(h, ops, signals, waits, sync_block, epoch, bump ? 1 : 0);
  return cudaGetLastError();
}

}  // namespace gpucomm::patterns::detail
