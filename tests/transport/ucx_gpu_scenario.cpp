// GPU PEs (heaps in device memory): puts from host and device buffers, fence, 8-byte put
// signals, gets, each checked through copies from device memory. UCX stages device memory
// through cuda_copy where its transport (TCP) cannot reach it.
#include <cuda_runtime_api.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ucx_scenarios.hpp"

namespace ucxtest {

namespace {
constexpr uint64_t kSlot = 1 << 20;

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

std::vector<uint8_t> read_device(const char* p, size_t n) {
  std::vector<uint8_t> out(n);
  cuda(cudaMemcpy(out.data(), p, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return out;
}

size_t length(uint64_t seed, int from, int to, int round) {
  uint64_t x =
      mix(seed, 99, static_cast<uint64_t>(from) << 16 | static_cast<uint64_t>(to), static_cast<uint64_t>(round));
  return x % 4 == 0 ? 1 + x % 64 : 1 + (x >> 8) % kSlot;
}
}  // namespace

void scenario_gpu_rma(Job& j, int iters) {
  const uint64_t sig = kSlot * static_cast<uint64_t>(j.n);
  cuda(cudaMemset(j.heap + sig, 0, 8 * static_cast<size_t>(j.n)), "cudaMemset");
  cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  j.barrier();
  char* staging = nullptr;  // a device-memory source
  cuda(cudaMalloc(reinterpret_cast<void**>(&staging), kSlot), "cudaMalloc");
  std::vector<uint8_t> src(kSlot), back(kSlot);
  for (int r = 1; r <= iters; ++r) {
    const bool from_device = r % 2 == 0;
    for (int t = 0; t < j.n; ++t) {
      const size_t len = length(j.seed, j.me, t, r);
      fill_pattern(src.data(), len,
                   mix(j.seed, static_cast<uint64_t>(j.me), static_cast<uint64_t>(t), static_cast<uint64_t>(r)));
      if (from_device) cuda(cudaMemcpy(staging, src.data(), len, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
      uint64_t done[2] = {0, 0}, value = static_cast<uint64_t>(r);
      j.r().put(t, kSlot * static_cast<uint64_t>(j.me), from_device ? staging : reinterpret_cast<char*>(src.data()),
                len, Completion{&done[0]});
      j.r().fence(t);
      j.r().put(t, sig + 8 * static_cast<uint64_t>(j.me), &value, 8, Completion{&done[1]});
      j.wait([&] { return load_acquire(&done[0]) == 1 && load_acquire(&done[1]) == 1; }, "puts to device memory");
    }
    j.wait(
        [&] {
          auto s = read_device(j.heap + sig, 8 * static_cast<size_t>(j.n));
          for (int p = 0; p < j.n; ++p) {
            uint64_t v;
            std::memcpy(&v, s.data() + 8 * static_cast<size_t>(p), 8);
            if (v < static_cast<uint64_t>(r)) return false;
          }
          return true;
        },
        "signals in device memory");
    for (int s = 0; s < j.n; ++s) {
      const size_t len = length(j.seed, s, j.me, r);
      auto got = read_device(j.heap + kSlot * static_cast<uint64_t>(s), len);
      size_t bad =
          check_pattern(got.data(), len,
                        mix(j.seed, static_cast<uint64_t>(s), static_cast<uint64_t>(j.me), static_cast<uint64_t>(r)));
      UCX_CHECK(bad == len, "round %d: %zu bytes from PE %d wrong at byte %zu", r, len, s, bad);
    }
    for (int t = 0; t < j.n; ++t) {
      const size_t len = length(j.seed, j.me, t, r);
      uint64_t done = 0;
      j.r().get(back.data(), t, kSlot * static_cast<uint64_t>(j.me), len, Completion{&done});
      j.wait([&] { return load_acquire(&done) == 1; }, "a get from device memory");
      size_t bad =
          check_pattern(back.data(), len,
                        mix(j.seed, static_cast<uint64_t>(j.me), static_cast<uint64_t>(t), static_cast<uint64_t>(r)));
      UCX_CHECK(bad == len, "round %d: get of %zu bytes from PE %d wrong at byte %zu", r, len, t, bad);
    }
    j.barrier();
  }
  cuda(cudaFree(staging), "cudaFree");
  std::printf("PE %d: %d rounds of puts and gets on device-memory heaps checked\n", j.me, iters);
}

}  // namespace ucxtest
