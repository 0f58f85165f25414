#pragma once
// Test kernels of the in-kernel collectives at every cooperation level, and their host side:
// run_levels() calls each operation from a warp, a block and a grid (cooperative launch) and
// compares with the CPU reference.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "coll_check.hpp"

namespace coll_check {

enum class Level { warp, block, grid };
inline const char* level_name(Level l) {
  return l == Level::warp ? "warp" : l == Level::block ? "block" : "grid";
}

// Device memory with guard bytes, `shift` bytes off 16-byte alignment.
struct DeviceMem {
  struct Buf {
    uint8_t* base = nullptr;
    size_t total = 0, shift = 0, bytes = 0;
    uint8_t* data() const { return base + kGuard + shift; }
    void write(const std::vector<uint8_t>& v) {
      if (!v.empty()) check(cudaMemcpy(data(), v.data(), v.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    std::vector<uint8_t> all() const {
      std::vector<uint8_t> v(total);
      check(cudaMemcpy(v.data(), base, total, cudaMemcpyDeviceToHost), "cudaMemcpy");
      return v;
    }
    std::vector<uint8_t> read() const {
      auto v = all();
      return std::vector<uint8_t>(v.begin() + static_cast<long>(kGuard + shift),
                                  v.begin() + static_cast<long>(kGuard + shift + bytes));
    }
    bool guards_ok() const {
      auto v = all();
      for (size_t i = 0; i < total; ++i)
        if ((i < kGuard + shift || i >= kGuard + shift + bytes) && v[i] != kPoison) return false;
      return true;
    }
    Buf() = default;
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    Buf(Buf&& o) noexcept : base(o.base), total(o.total), shift(o.shift), bytes(o.bytes) { o.base = nullptr; }
    ~Buf() {
      if (base) (void)cudaFree(base);
    }
  };
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
  Buf alloc(size_t bytes, size_t shift) {
    Buf b;
    b.total = bytes + 2 * kGuard + 16;
    b.shift = shift;
    b.bytes = bytes;
    check(cudaMalloc(&b.base, b.total), "cudaMalloc");
    check(cudaMemset(b.base, kPoison, b.total), "cudaMemset");
    return b;
  }
};

// The test kernels live in coll_kernels_<type>.cu (objects per element type and level, compiled once
// for both test programs): every level and operation for f32; block level for the other types
// (their arithmetic differs, the cooperation code does not).
void launch_level_f32(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send, void* recv,
                      size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s);
void launch_level_bf16(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send,
                       void* recv, size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s);
void launch_level_i64(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send, void* recv,
                      size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s);
void launch_level_e4m3(Level level, const DeviceHandle& h, const CollHandle& ch, CollOp op, const void* send,
                       void* recv, size_t count, RedOp red, int root, Algorithm a, unsigned blocks, cudaStream_t s);
// Rounds of in-kernel calls at warp and block level through a coll::device::Session, and with odd
// ranks calling each collective on its own (coll_session.cu); returns the wrong values.
int run_session(Runtime& rt, Collectives& coll, uint64_t seed);
// launch_grid with the f32 grid-level barrier kernel (the refusal test asks for too many blocks).
void launch_grid_barrier_f32(unsigned blocks, const DeviceHandle& h, const CollHandle& ch);
inline bool level_has_type(Level level, DataType dt) {
  return level == Level::block || dt == DataType::f32;
}

// The operations (barrier to alltoall) at every level for f32 and at block level for one more type
// per element size, against the reference; counts 1, 37 and 3000; each algorithm that implements the operation.
inline int run_levels(Runtime& rt, Collectives& coll, uint64_t seed, unsigned grid_blocks) {
  const Team& team = rt.world();
  const CollHandle ch = coll.handle(team);
  const DeviceHandle h = rt.device_handle();
  const TopoSummary t = coll.topology(team);
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  DeviceMem mem;
  int failures = 0, printed = 0;
  size_t idx = 0;
  for (Level level : {Level::warp, Level::block, Level::grid}) {
    for (int o = 0; o <= static_cast<int>(CollOp::alltoall); ++o) {
      const auto op = static_cast<CollOp>(o);
      for (Algorithm a : algorithms_of(op, t)) {
        for (DataType dt : {DataType::bf16, DataType::f32, DataType::i64, DataType::f8e4m3}) {
          if (!level_has_type(level, dt)) continue;
          for (uint64_t count : {uint64_t{1}, uint64_t{37}, uint64_t{3000}}) {
            Case c{op,    a,     dt,    reduces(op) ? redops_of(dt)[idx % redops_of(dt).size()] : RedOp::sum,
                   count, false, false, 0};
            const unsigned blocks = level == Level::grid ? grid_blocks : 1;
            ++idx;
            Prepared p = prepare(coll, team, c, idx, seed);
            // The kernel decides itself: the reference needs its algorithm and channels.
            p.ref.channels = blocks;
            p.ref.algo = a;
            if (a == Algorithm::automatic) {
              const int r = auto_rule(ch, op, count * type_size(dt));
              p.ref.algo = static_cast<Algorithm>(ch.auto_algo[o][r]);
            }
            const auto& mine = p.inputs[static_cast<size_t>(team.rank())];
            auto send = mem.alloc(p.send_elems * type_size(dt), 0);
            auto recv = mem.alloc(p.recv_elems * type_size(dt), 0);
            send.write(mine);
            const std::vector<uint8_t> before = recv.read();
            const auto launch = type_size(dt) == 1   ? launch_level_e4m3
                                : type_size(dt) == 2 ? launch_level_bf16
                                : type_size(dt) == 4 ? launch_level_f32
                                                     : launch_level_i64;
            launch(level, h, ch, op, send.data(), recv.data(), count, c.redop, p.root, a, blocks, s);
            const cudaError_t e = cudaStreamSynchronize(s);
            if (e != cudaSuccess) {
              coll.check_device();
              throw std::runtime_error(std::string("kernel: ") + cudaGetErrorString(e));
            }
            if (op == CollOp::barrier) continue;
            // The kernel's types: bf16 for 2 bytes, f32, i64, e4m3.
            const std::vector<uint8_t> want = reference(p.ref, p.inputs, team.rank(), before);
            if (recv.read() != want || !recv.guards_ok()) {
              ++failures;
              if (printed++ < 10) {
                std::fprintf(
                    stderr,
                    "CHECK failed: rank %d: %s level %s (%u blocks): result differs from the reference (seed %llu)\n",
                    rt.rank(), describe(c, p.root).c_str(), level_name(level), blocks,
                    static_cast<unsigned long long>(seed));
              }
            }
          }
        }
      }
    }
  }
  return failures;
}

}  // namespace coll_check
