// One-member teams on GPU PEs (docs/COLLECTIVES.md, "One-member teams"): no protocol, one small
// kernel with three parameters, or nothing at all. The copy moves the widest unit both pointers
// are aligned to; low-precision reductions round-trip every element through f32 (the layer's
// conversion rules: NaN becomes the canonical NaN), in place or not.
#include "gpu_launch.hpp"
#include "gpucomm/base/load_kernels.hpp"
#include "gpucomm/collectives/numeric.hpp"

namespace gpucomm::coll::detail {

namespace {

constexpr unsigned kAloneThreads = 256;
constexpr uint64_t kAloneMaxBlocks = 1024;

// Threads and blocks for `units` independent pieces of work.
void shape(uint64_t units, unsigned* threads, unsigned* blocks) {
  const uint64_t t = units < kAloneThreads ? (units + 31) / 32 * 32 : kAloneThreads;
  *threads = static_cast<unsigned>(t == 0 ? 32 : t);
  const uint64_t b = (units + *threads - 1) / *threads;
  *blocks = static_cast<unsigned>(b == 0 ? 1 : (b < kAloneMaxBlocks ? b : kAloneMaxBlocks));
}

// dst[0, bytes) = src[0, bytes), U-sized units, the tail (bytes % sizeof(U)) byte by byte.
template <class U>
__global__ void __launch_bounds__(kAloneThreads) copy_kernel(char* dst, const char* src, uint64_t bytes) {
  const uint64_t units = bytes / sizeof(U);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto* d = reinterpret_cast<U*>(dst);
  const auto* s = reinterpret_cast<const U*>(src);
  for (uint64_t i = first; i < units; i += stride) d[i] = s[i];
  for (uint64_t i = units * sizeof(U) + first; i < bytes; i += stride) dst[i] = src[i];
}

template <DataType DT>
__global__ void __launch_bounds__(kAloneThreads) convert_kernel(void* dst, const void* src, uint64_t count) {
  using N = Num<DT>;
  using S = typename N::S;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  auto* d = static_cast<S*>(dst);
  const auto* s = static_cast<const S*>(src);
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    d[i] = N::from_acc(N::to_acc(s[i]));
}

template <class U>
cudaError_t copy_as(void* dst, const void* src, uint64_t bytes, cudaStream_t s) {
  unsigned threads = 0, blocks = 0;
  shape(bytes / sizeof(U) + bytes % sizeof(U), &threads, &blocks);
  copy_kernel<U><<<blocks, threads, 0, s>>>(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  return cudaGetLastError();
}

template <DataType DT>
cudaError_t convert_as(void* dst, const void* src, uint64_t count, cudaStream_t s) {
  unsigned threads = 0, blocks = 0;
  shape(count, &threads, &blocks);
  convert_kernel<DT><<<blocks, threads, 0, s>>>(dst, src, count);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_alone_copy(void* dst, const void* src, uint64_t bytes, cudaStream_t s) {
  if (bytes == 0 || dst == src) return cudaSuccess;
  const auto a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  if (a % 16 == 0) return copy_as<uint4>(dst, src, bytes, s);
  if (a % 8 == 0) return copy_as<uint64_t>(dst, src, bytes, s);
  if (a % 4 == 0) return copy_as<uint32_t>(dst, src, bytes, s);
  return copy_as<uint8_t>(dst, src, bytes, s);
}

cudaError_t launch_alone_convert(DataType dt, void* dst, const void* src, uint64_t count, cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  switch (dt) {
    case DataType::f8e4m3:
      return convert_as<DataType::f8e4m3>(dst, src, count, s);
    case DataType::f8e5m2:
      return convert_as<DataType::f8e5m2>(dst, src, count, s);
    case DataType::f16:
      return convert_as<DataType::f16>(dst, src, count, s);
    case DataType::bf16:
      return convert_as<DataType::bf16>(dst, src, count, s);
    default:  // the conversion is the identity
      return launch_alone_copy(dst, src, count * type_size(dt), s);
  }
}

cudaError_t preload_alone() {
  return load_kernels(copy_kernel<uint4>, copy_kernel<uint64_t>, copy_kernel<uint32_t>, copy_kernel<uint8_t>,
                      convert_kernel<DataType::f8e4m3>, convert_kernel<DataType::f8e5m2>, convert_kernel<DataType::f16>,
                      convert_kernel<DataType::bf16>);
}

}  // namespace gpucomm::coll::detail
