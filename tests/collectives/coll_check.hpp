#pragma once
// What the collectives' PE programs share (host-memory PEs: coll_pe.cpp; GPU PEs: coll_gpu_pe.cu):
// the test matrix, inputs that stay finite under every reduction, one call of the host API with
// guarded buffers (in place or not, aligned or not), and the comparison with the CPU reference.
// `Mem` provides the buffers: host memory, or device memory with copies.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/collectives/numeric.hpp"
#include "gpucomm/collectives/reference.hpp"
#include "gpucomm/gpucomm.hpp"
#include "pe_check.hpp"

namespace coll_check {

using namespace gpucomm;
using namespace gpucomm::coll;

inline constexpr uint8_t kPoison = 0xA5;
inline constexpr size_t kGuard = 64;

inline uint64_t job_seed(Runtime& rt) {
  auto all = rt.bootstrap().allgather(std::to_string(gpucomm::testing::pe_seed(0)));
  return std::strtoull(all[0].c_str(), nullptr, 10);
}

struct Case {
  CollOp op;
  Algorithm algo;
  DataType dt;
  RedOp redop;
  uint64_t count;
  bool in_place;
  bool unaligned;
  int channels;
};

inline std::string describe(const Case& c, int root) {
  char b[256];
  std::snprintf(b, sizeof b, "%s algo=%s type=%s op=%s count=%llu %s%s channels=%d root=%d", op_name(c.op),
                algorithm_name(c.algo), type_name(c.dt), redop_name(c.redop), static_cast<unsigned long long>(c.count),
                c.in_place ? "in-place" : "out-of-place", c.unaligned ? " unaligned" : "", c.channels, root);
  return b;
}

inline std::vector<RedOp> redops_of(DataType dt) {
  std::vector<RedOp> v = {RedOp::sum, RedOp::prod, RedOp::min, RedOp::max};
  if (is_integer(dt)) v.insert(v.end(), {RedOp::band, RedOp::bor, RedOp::bxor});
  return v;
}

inline std::vector<Algorithm> algorithms_of(CollOp op, const TopoSummary& t) {
  std::vector<Algorithm> v = {Algorithm::automatic};
  for (int i = 1; i <= static_cast<int>(Algorithm::last); ++i) {
    const auto a = static_cast<Algorithm>(i);
    if (!implements(a, op)) continue;
    if (a == Algorithm::oneshot_ll && (!t.all_direct || t.nodes > 1)) continue;
    if (a == Algorithm::hierarchical && t.per_node <= 0) continue;
    v.push_back(a);
  }
  return v;
}

// Every (operation, algorithm, type): the count classes 0, 1, odd, odd and unaligned, large, the
// reductions rotated over them (those left over added), in and out of place alternating, channels
// 0 (the model), 2, 3.
inline std::vector<Case> matrix(const TopoSummary& t, const std::vector<DataType>& types, bool reduced,
                                uint64_t large) {
  std::vector<Case> out;
  const uint64_t counts[] = {0, 1, 37, 37, large};
  const int channels[] = {0, 2, 3};
  for (int o = 0; o <= static_cast<int>(CollOp::last); ++o) {
    const auto op = static_cast<CollOp>(o);
    for (Algorithm a : algorithms_of(op, t)) {
      if (op == CollOp::barrier) {
        out.push_back(Case{op, a, DataType::u64, RedOp::sum, 0, false, false, 0});
        continue;
      }
      for (DataType dt : types) {
        const auto ops = reduces(op) ? redops_of(dt) : std::vector<RedOp>{RedOp::sum};
        const size_t classes = reduced ? 3 : 5;
        const size_t total = std::max(classes, ops.size());
        for (size_t k = 0; k < total; ++k) {
          Case c{};
          c.op = op;
          c.algo = a;
          c.dt = dt;
          c.redop = ops[(k + static_cast<size_t>(o)) % ops.size()];
          const size_t cls = reduced ? (k % 3) * 2 : k % 5;  // reduced: 0, odd unaligned, large
          c.count = counts[cls];
          c.unaligned = cls == 3;
          c.in_place = k % 2 == 1 && op != CollOp::alltoallv;
          c.channels = channels[(k + static_cast<size_t>(a)) % 3];
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

inline std::vector<DataType> all_types() {
  std::vector<DataType> v;
  for (int i = 0; i <= static_cast<int>(DataType::last); ++i) v.push_back(static_cast<DataType>(i));
  return v;
}

// Member r's input for a case: values that stay finite under the reduction (sums in [-8, 8],
// products in [0.5, 2]; integers: any bits).
inline std::vector<uint8_t> make_input(uint64_t seed, size_t idx, int r, const Case& c, uint64_t elems) {
  std::mt19937_64 rng(seed ^ (idx * 0x9e3779b97f4a7c15ull) ^ (static_cast<uint64_t>(r) << 48));
  const size_t sz = type_size(c.dt);
  std::vector<uint8_t> v(elems * sz);
  std::uniform_real_distribution<float> sum_range(-8.f, 8.f), prod_range(0.5f, 2.f);
  auto real = [&] { return c.redop == RedOp::prod ? prod_range(rng) : sum_range(rng); };
  for (uint64_t i = 0; i < elems; ++i) {
    uint8_t* p = v.data() + i * sz;
    uint64_t x = 0;
    switch (c.dt) {
      case DataType::f8e4m3:
        x = num::f32_to_e4m3_host(real());
        break;
      case DataType::f8e5m2:
        x = num::f32_to_e5m2_host(real());
        break;
      case DataType::f16:
        x = num::f32_to_f16_host(real());
        break;
      case DataType::bf16:
        x = num::f32_to_bf16_host(real());
        break;
      case DataType::f32: {
        const float f = real();
        std::memcpy(&x, &f, 4);
        break;
      }
      case DataType::f64: {
        const double d = static_cast<double>(real()) + static_cast<double>(real()) * 1e-9;
        std::memcpy(&x, &d, 8);
        break;
      }
      default:
        x = rng();
    }
    std::memcpy(p, &x, sz);  // little endian: the low bytes
  }
  return v;
}

// Everything one case needs besides the buffers.
struct Prepared {
  RefSetup ref;
  std::vector<std::vector<uint8_t>> inputs;  // every member's send buffer
  uint64_t send_elems = 0, recv_elems = 0;
  int root = 0;
  std::vector<uint64_t> sc, sd, rc, rd;  // this PE's alltoallv arrays
  Choice choice;
};

inline Prepared prepare(Collectives& coll, const Team& team, const Case& c, size_t idx, uint64_t seed) {
  Prepared p;
  const int n = team.size(), me = team.rank();
  const size_t sz = type_size(c.dt);
  p.root = static_cast<int>(idx % static_cast<size_t>(n));
  const uint64_t blk = c.count;
  p.send_elems = p.recv_elems = blk;
  if (c.op == CollOp::allgather) p.recv_elems = blk * static_cast<uint64_t>(n);
  if (c.op == CollOp::reduce_scatter) p.send_elems = blk * static_cast<uint64_t>(n);
  if (c.op == CollOp::alltoall) p.send_elems = p.recv_elems = blk * static_cast<uint64_t>(n);
  RefSetup& ref = p.ref;
  ref.op = c.op;
  ref.dt = c.dt;
  ref.redop = c.redop;
  ref.count = blk;
  ref.root = p.root;
  std::vector<uint64_t> send_end(static_cast<size_t>(n), 0), recv_end(static_cast<size_t>(n), 0);
  if (c.op == CollOp::alltoallv) {
    // Counts 0..count, a third of them 0, with gaps between the blocks.
    std::mt19937_64 rng(seed ^ idx);
    ref.counts.assign(static_cast<size_t>(n), std::vector<uint64_t>(static_cast<size_t>(n)));
    ref.send_displs = ref.recv_displs = ref.counts;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
        ref.counts[i][j] = rng() % 3 == 0 ? 0 : rng() % (blk + 1);
        ref.send_displs[i][j] = send_end[i] + rng() % 3;
        send_end[i] = ref.send_displs[i][j] + ref.counts[i][j];
      }
    }
    for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
      for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
        ref.recv_displs[i][j] = recv_end[j] + rng() % 3;
        recv_end[j] = ref.recv_displs[i][j] + ref.counts[i][j];
      }
    }
    p.send_elems = send_end[static_cast<size_t>(me)];
    p.recv_elems = recv_end[static_cast<size_t>(me)];
    for (size_t j = 0; j < static_cast<size_t>(n); ++j) {
      const auto mu = static_cast<size_t>(me);
      p.sc.push_back(ref.counts[mu][j]);
      p.sd.push_back(ref.send_displs[mu][j]);
      p.rc.push_back(ref.counts[j][mu]);
      p.rd.push_back(ref.recv_displs[j][mu]);
    }
  }
  CollOptions o;
  o.algorithm = c.algo;
  o.channels = c.channels;
  p.choice = coll.plan(c.op, c.dt, blk * sz, team, o);
  ref.algo = p.choice.algorithm;
  ref.channels = p.choice.channels;
  const CollHandle h = coll.handle(team);
  ref.sizes = Sizes{n, h.slot_bytes, h.ring_bytes, h.ll_bytes, h.per_node};
  if (h.per_node) {
    // The node table as this PE's topology summary describes it (rows: nodes in order of their
    // first member; members in team order), rebuilt from the team on the host.
    ref.nodes.assign(h.nodes, {});
    std::vector<int> first;
    for (int i = 0; i < n; ++i) {
      const int node = coll.runtime().node_of(team.world_rank(i));
      auto it = std::find(first.begin(), first.end(), node);
      if (it == first.end()) first.push_back(node), it = first.end() - 1;
      ref.nodes[static_cast<size_t>(it - first.begin())].push_back(i);
    }
  }
  p.inputs.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const uint64_t elems = c.op == CollOp::alltoallv ? send_end[static_cast<size_t>(r)] : p.send_elems;
    p.inputs[static_cast<size_t>(r)] = make_input(seed, idx, r, c, elems);
  }
  return p;
}

// Runs case `c` through `coll` with buffers from `mem` (alloc(bytes, shift) -> a buffer with
// data(), write(bytes), read() -> the data bytes, guards_ok()); `after` runs after the call (device
// PEs: synchronize and check). Returns the number of failed checks.
template <class Mem, class After>
int run_case(Runtime& rt, Collectives& coll, const Team& team, const Case& c, size_t idx, uint64_t seed, Mem& mem,
             Stream stream, After&& after, int& printed) {
  const int n = team.size(), me = team.rank();
  const size_t sz = type_size(c.dt);
  Prepared p = prepare(coll, team, c, idx, seed);
  const auto& mine = p.inputs[static_cast<size_t>(me)];
  const size_t shift = c.unaligned ? sz : 0;
  auto send = mem.alloc(p.send_elems * sz, shift);
  auto recv = mem.alloc(p.recv_elems * sz, shift);
  send.write(mine);
  auto* sp = static_cast<uint8_t*>(send.data());
  auto* rp = static_cast<uint8_t*>(recv.data());
  const size_t blk = c.count * sz;
  // What the receive buffer holds before the call, and where it is.
  std::vector<uint8_t> before = recv.read();
  size_t out_off = 0;
  bool out_in_send = false;
  if (c.in_place) {
    if (c.op == CollOp::allgather) {
      std::vector<uint8_t> r = before;
      std::copy(mine.begin(), mine.end(), r.begin() + static_cast<long>(static_cast<size_t>(me) * blk));
      recv.write(r);
      before = r;
      sp = rp + static_cast<size_t>(me) * blk;
    } else if (c.op == CollOp::reduce_scatter) {
      rp = sp + static_cast<size_t>(me) * blk;
      out_in_send = true;
      out_off = static_cast<size_t>(me) * blk;
      before.assign(mine.begin() + static_cast<long>(out_off), mine.begin() + static_cast<long>(out_off + blk));
    } else {
      rp = sp;
      out_in_send = true;
      before = mine;
    }
  }
  CollOptions o;
  o.algorithm = c.algo;
  o.channels = c.channels;
  switch (c.op) {
    case CollOp::barrier:
      coll.barrier(team, stream, o);
      break;
    case CollOp::broadcast:
      coll.broadcast(sp, rp, c.count, c.dt, p.root, team, stream, o);
      break;
    case CollOp::reduce:
      coll.reduce(sp, rp, c.count, c.dt, c.redop, p.root, team, stream, o);
      break;
    case CollOp::allreduce:
      coll.allreduce(sp, rp, c.count, c.dt, c.redop, team, stream, o);
      break;
    case CollOp::allgather:
      coll.allgather(sp, rp, c.count, c.dt, team, stream, o);
      break;
    case CollOp::reduce_scatter:
      coll.reduce_scatter(sp, rp, c.count, c.dt, c.redop, team, stream, o);
      break;
    case CollOp::alltoall:
      coll.alltoall(sp, rp, c.count, c.dt, team, stream, o);
      break;
    case CollOp::alltoallv:
      coll.alltoallv(sp, p.sc.data(), p.sd.data(), rp, p.rc.data(), p.rd.data(), c.dt, team, stream, o);
      break;
  }
  after();
  if (c.op == CollOp::barrier) return 0;
  int failures = 0;
  const std::string what = describe(c, p.root) + " -> " + algorithm_name(p.choice.algorithm) + "/" +
                           std::to_string(p.choice.channels) + "ch on " + std::to_string(n) + " PEs";
  const std::vector<uint8_t> want = reference(p.ref, p.inputs, me, before);
  const std::vector<uint8_t> all = out_in_send ? send.read() : recv.read();
  const std::vector<uint8_t> got(all.begin() + static_cast<long>(out_off),
                                 all.begin() + static_cast<long>(out_off + want.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    ++failures;
    if (printed++ < 10) {
      const size_t e = i / sz;
      uint64_t g = 0, w = 0;
      std::memcpy(&g, got.data() + e * sz, sz);
      std::memcpy(&w, want.data() + e * sz, sz);
      std::fprintf(stderr, "CHECK failed: rank %d: %s: element %zu is 0x%llx, expected 0x%llx (seed %llu)\n", rt.rank(),
                   what.c_str(), e, static_cast<unsigned long long>(g), static_cast<unsigned long long>(w),
                   static_cast<unsigned long long>(seed));
    }
    break;
  }
  if (!send.guards_ok() || !recv.guards_ok()) {
    ++failures;
    std::fprintf(stderr, "CHECK failed: rank %d: %s: wrote outside its buffers\n", rt.rank(), what.c_str());
  }
  if (!c.in_place && c.op != CollOp::broadcast && send.read() != mine) {
    ++failures;
    std::fprintf(stderr, "CHECK failed: rank %d: %s: changed its send buffer\n", rt.rank(), what.c_str());
  }
  return failures;
}

// Host memory with guard bytes, `shift` bytes off 16-byte alignment.
struct HostMem {
  struct Buf {
    std::vector<uint8_t> mem;
    size_t shift = 0, bytes = 0;
    uint8_t* data() {
      auto base = (reinterpret_cast<uintptr_t>(mem.data()) + kGuard + 15) / 16 * 16;
      return reinterpret_cast<uint8_t*>(base) + shift;
    }
    void write(const std::vector<uint8_t>& v) { std::copy(v.begin(), v.end(), data()); }
    std::vector<uint8_t> read() { return std::vector<uint8_t>(data(), data() + bytes); }
    bool guards_ok() {
      const uint8_t* d = data();
      const uint8_t* m = mem.data();
      auto poison = [](uint8_t b) { return b == kPoison; };
      return std::all_of(m, d, poison) && std::all_of(d + bytes, m + mem.size(), poison);
    }
  };
  Buf alloc(size_t bytes, size_t shift) {
    return Buf{std::vector<uint8_t>(bytes + 2 * kGuard + 32, kPoison), shift, bytes};
  }
};

}  // namespace coll_check
