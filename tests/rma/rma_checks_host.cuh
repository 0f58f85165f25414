#pragma once
// The host side of the device-API checks: buffers, launches and comparisons (see rma_checks.cuh).
#include <map>

#include "rma_checks.cuh"

namespace rma_checks {

struct Ctx {
  Runtime& rt;
  Report& rep;
  uint64_t seed;
  DeviceHandle h{};
  int me = 0, n = 1, right = 0, left = 0;
  cudaStream_t s = nullptr;
  static constexpr size_t kCap = (size_t(1) << 20) + 64;
  char* src = nullptr;      // symmetric, this PE's random data
  char* dst = nullptr;      // symmetric, one slot of kCap per sender
  uint64_t* sig = nullptr;  // symmetric, one per sender
  char* out = nullptr;      // local device buffer
  uint64_t* res = nullptr;  // local device results
  uint64_t sigcount = 0;

  Ctx(Runtime& r, Report& p, uint64_t sd) : rt(r), rep(p), seed(sd) {
    h = rt.device_handle();
    me = rt.rank(), n = rt.size(), right = (me + 1) % n, left = (me - 1 + n) % n;
    s = reinterpret_cast<cudaStream_t>(rt.stream());
    src = static_cast<char*>(rt.malloc(kCap));
    dst = static_cast<char*>(rt.malloc(kCap * static_cast<size_t>(n)));
    sig = static_cast<uint64_t*>(rt.calloc(static_cast<size_t>(n), sizeof(uint64_t)));
    RMA_CUDA(cudaMalloc(&out, kCap));
    RMA_CUDA(cudaMalloc(&res, 64 * sizeof(uint64_t)));
    const auto& mine = data_of(me);
    RMA_CUDA(cudaMemcpy(src, mine.data(), kCap, cudaMemcpyHostToDevice));
    rt.barrier_all();
  }
  ~Ctx() {
    cudaFree(out);
    cudaFree(res);
  }
  std::map<int, std::vector<uint8_t>> data_cache;
  const std::vector<uint8_t>& data_of(int pe) {
    auto it = data_cache.find(pe);
    if (it == data_cache.end())
      it = data_cache.emplace(pe, random_bytes(seed * 1000003u + static_cast<uint64_t>(pe), kCap)).first;
    return it->second;
  }
  void sync() {
    RMA_CUDA(cudaStreamSynchronize(s));
    rt.check_device();
  }
  std::vector<uint8_t> fetch(const void* p, size_t bytes) {
    std::vector<uint8_t> v(bytes);
    RMA_CUDA(cudaMemcpy(v.data(), p, bytes, cudaMemcpyDeviceToHost));
    return v;
  }
  std::vector<uint64_t> results(int count) {
    std::vector<uint64_t> v(static_cast<size_t>(count));
    RMA_CUDA(cudaMemcpy(v.data(), res, sizeof(uint64_t) * static_cast<size_t>(count), cudaMemcpyDeviceToHost));
    return v;
  }
  // got[doff, doff+bytes) must equal want[soff, ...); everything else in got the poison.
  void compare(const std::string& what, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, size_t soff,
               size_t doff, size_t bytes) {
    for (size_t i = 0; i < got.size(); ++i) {
      bool inside = i >= doff && i < doff + bytes;
      uint8_t expect = inside ? want[soff + i - doff] : kPoison;
      if (got[i] != expect) {
        char b[160];
        std::snprintf(b, sizeof b, " (rank %d): byte %zu is 0x%02x, expected 0x%02x (%s)", me, i, got[i], expect,
                      inside ? "payload" : "poison outside the payload");
        rep.fail(what + b + ", seed " + std::to_string(seed));
        return;
      }
    }
  }
};

inline std::string label(const char* op, const char* level, size_t bytes, size_t soff, size_t doff) {
  return std::string(op) + " level " + level + " bytes " + std::to_string(bytes) + " src+" + std::to_string(soff) +
         " dst+" + std::to_string(doff);
}

template <class Coop>
void check_put(Ctx& c, size_t bytes, size_t soff, size_t doff, int nbi) {
  Runtime& rt = c.rt;
  RMA_CUDA(cudaMemset(c.dst, kPoison, Ctx::kCap * static_cast<size_t>(c.n)));
  rt.barrier_all();
  k_put<Coop><<<1, coop_threads<Coop>(), 0, c.s>>>(c.h, c.dst + Ctx::kCap * static_cast<size_t>(c.me) + doff,
                                                   c.src + soff, bytes, c.right, nbi);
  RMA_LAUNCHED();
  c.sync();
  rt.barrier_all();
  c.compare(label(nbi ? "put_nbi" : "put", coop_name<Coop>(), bytes, soff, doff),
            c.fetch(c.dst + Ctx::kCap * static_cast<size_t>(c.left), Ctx::kCap), c.data_of(c.left), soff, doff, bytes);
  rt.barrier_all();
}

template <class Coop>
void check_get(Ctx& c, size_t bytes, size_t soff, size_t doff, int nbi) {
  Runtime& rt = c.rt;
  RMA_CUDA(cudaMemset(c.out, kPoison, Ctx::kCap));
  k_get<Coop><<<1, coop_threads<Coop>(), 0, c.s>>>(c.h, c.out + doff, c.src + soff, bytes, c.right, nbi);
  RMA_LAUNCHED();
  c.sync();
  c.compare(label(nbi ? "get_nbi" : "get", coop_name<Coop>(), bytes, soff, doff), c.fetch(c.out, Ctx::kCap),
            c.data_of(c.right), soff, doff, bytes);
}

template <class Coop>
void check_put_signal(Ctx& c, size_t bytes, size_t soff, SignalOp op) {
  Runtime& rt = c.rt;
  RMA_CUDA(cudaMemset(c.dst, kPoison, Ctx::kCap * static_cast<size_t>(c.n)));
  RMA_CUDA(cudaMemset(c.out, kPoison, Ctx::kCap));
  rt.barrier_all();
  const uint64_t target = ++c.sigcount;
  const uint64_t v = op == SignalOp::set ? target : 1;
  k_put_signal<Coop><<<1, coop_threads<Coop>(), 0, c.s>>>(c.h, c.dst + Ctx::kCap * static_cast<size_t>(c.me),
                                                          c.src + soff, bytes, &c.sig[c.me], v, op, c.right);
  RMA_LAUNCHED();
  k_wait_copy<Coop><<<1, coop_threads<Coop>(), 0, c.s>>>(
      c.h, &c.sig[c.left], target, c.dst + Ctx::kCap * static_cast<size_t>(c.left), c.out, Ctx::kCap, c.res);
  RMA_LAUNCHED();
  c.sync();
  std::string what =
      label(op == SignalOp::set ? "put_signal(set)" : "put_signal(add)", coop_name<Coop>(), bytes, soff, 0);
  c.compare(what, c.fetch(c.out, Ctx::kCap), c.data_of(c.left), soff, 0, bytes);
  uint64_t seen = c.results(1)[0];
  if (seen != target)
    c.rep.fail(what + ": signal_wait_until returned " + std::to_string(seen) + ", expected " + std::to_string(target));
  rt.barrier_all();
}

template <class Coop>
void check_level(Ctx& c) {
  const size_t sizes[] = {1, 7, 8, 16, 40, 100, 513, 4096 + 3, 65536, (size_t(1) << 20)};
  for (size_t bytes : sizes) {
    for (size_t soff : {size_t(0), size_t(1), size_t(8)}) {
      for (size_t doff : {size_t(0), size_t(3), size_t(24)}) {
        if (bytes + soff > Ctx::kCap - 32 || bytes + doff > Ctx::kCap) continue;
        check_put<Coop>(c, bytes, soff, doff, 0);
        check_get<Coop>(c, bytes, soff, doff, 0);
        if (soff == doff || bytes >= 65536) {
          check_put<Coop>(c, bytes, soff, doff, 1);
          check_get<Coop>(c, bytes, soff, doff, 1);
        }
      }
    }
  }
  for (size_t bytes : {size_t(8), size_t(100), size_t(4096), size_t(1) << 20}) {
    check_put_signal<Coop>(c, bytes, 0, SignalOp::set);
    check_put_signal<Coop>(c, bytes, 8, SignalOp::add);
  }
}

inline void check_scalars_and_ptr(Ctx& c) {
  Runtime& rt = c.rt;
  auto* w32 = rt.alloc<int32_t>(static_cast<size_t>(c.n));
  auto* w64 = rt.alloc<uint64_t>(2 * static_cast<size_t>(c.n));
  auto* wd = rt.alloc<double>(static_cast<size_t>(c.n));
  std::mt19937_64 g(c.seed + static_cast<uint64_t>(c.me));
  int32_t a = static_cast<int32_t>(g());
  uint64_t b = g();
  double d = static_cast<double>(g() % 100000) / 7.0;
  k_scalars<<<1, 1, 0, c.s>>>(c.h, &w32[c.me], &w64[2 * static_cast<size_t>(c.me)], &wd[c.me], c.right, a, b, d, c.res);
  RMA_LAUNCHED();
  c.sync();
  auto r = c.results(6);
  double back;
  std::memcpy(&back, &r[2], 8);
  if (static_cast<int32_t>(static_cast<uint32_t>(r[0])) != a) c.rep.fail("p/g int32 round trip");
  if (r[1] != b) c.rep.fail("p/g uint64 round trip");
  if (back != d) c.rep.fail("p/g double round trip");
  if (r[3] != 1) {
    c.rep.fail("ptr() returned nullptr for a reachable PE");
  } else if (r[4] != (b ^ 0xFFFF)) {
    c.rep.fail("store and load through ptr() disagree");
  }
  if (r[5] != 1) c.rep.fail("ptr() of a PE outside the job is not nullptr");
  rt.barrier_all();
  // The receiver sees the sender's values in its own heap.
  int32_t got32;
  uint64_t got64;
  RMA_CUDA(cudaMemcpy(&got32, &w32[c.left], 4, cudaMemcpyDeviceToHost));
  RMA_CUDA(cudaMemcpy(&got64, &w64[2 * c.left + 1], 8, cudaMemcpyDeviceToHost));
  std::mt19937_64 gl(c.seed + static_cast<uint64_t>(c.left));
  int32_t la = static_cast<int32_t>(gl());
  uint64_t lb = gl();
  if (got32 != la) c.rep.fail("p from the left neighbour did not land (int32)");
  if (got64 != (lb ^ 0xFFFF)) c.rep.fail("direct store through ptr() from the left neighbour did not land");
  rt.barrier_all();
  rt.free(wd);
  rt.free(w64);
  rt.free(w32);
}

template <class Coop>
void check_waits(Ctx& c) {
  Runtime& rt = c.rt;
  auto* w64 = rt.alloc<int64_t>(6 * static_cast<size_t>(c.n));
  auto* w32 = rt.alloc<int32_t>(6 * static_cast<size_t>(c.n));
  auto* u32 = rt.alloc<uint32_t>(6 * static_cast<size_t>(c.n));
  std::vector<int64_t> i64(6 * static_cast<size_t>(c.n), 100);
  std::vector<int32_t> i32(6 * static_cast<size_t>(c.n), 100);
  std::vector<uint32_t> iu(6 * static_cast<size_t>(c.n), 100);
  RMA_CUDA(cudaMemcpy(w64, i64.data(), i64.size() * 8, cudaMemcpyHostToDevice));
  RMA_CUDA(cudaMemcpy(w32, i32.data(), i32.size() * 4, cudaMemcpyHostToDevice));
  RMA_CUDA(cudaMemcpy(u32, iu.data(), iu.size() * 4, cudaMemcpyHostToDevice));
  rt.barrier_all();
  const size_t mine = 6 * static_cast<size_t>(c.me), left = 6 * static_cast<size_t>(c.left);
  k_set_cmp_words<<<1, 1, 0, c.s>>>(c.h, &w64[mine], &w32[mine], &u32[mine], c.right);
  RMA_LAUNCHED();
  k_wait_cmp_words<Coop><<<1, coop_threads<Coop>(), 0, c.s>>>(c.h, &w64[left], &w32[left], &u32[left], c.res);
  RMA_LAUNCHED();
  c.sync();
  auto r = c.results(6);
  const int64_t target[6] = {7, 5, 200, 150, 50, 60};
  const char* names[6] = {"eq", "ne", "gt", "ge", "lt", "le"};
  for (int i = 0; i < 6; ++i) {
    uint64_t want = static_cast<uint64_t>(target[i]) ^ (static_cast<uint64_t>(target[i]) << 20) ^
                    (static_cast<uint64_t>(target[i]) << 40);
    if (r[static_cast<size_t>(i)] != want) {
      c.rep.fail(std::string("wait_until/test ") + names[i] + " level " + coop_name<Coop>() + ": got code " +
                 std::to_string(r[static_cast<size_t>(i)]) + ", expected " + std::to_string(want));
    }
  }
  rt.barrier_all();
  rt.free(u32);
  rt.free(w32);
  rt.free(w64);
}

template <mem::Scope S, class T>
void check_atomics_one(Ctx& c, const char* what) {
  Runtime& rt = c.rt;
  auto* words = rt.alloc<T>(static_cast<size_t>(c.n));
  k_atomics<S, T><<<1, 1, 0, c.s>>>(c.h, &words[c.me], c.right, c.seed + static_cast<uint64_t>(c.me) * 77, c.res);
  RMA_LAUNCHED();
  c.sync();
  uint64_t bad = c.results(1)[0];
  if (bad) {
    c.rep.fail(std::string("atomics ") + what + ": " + std::to_string(bad) +
               " results differ from the sequential model");
  }
  rt.barrier_all();
  rt.free(words);
}

inline void check_atomics(Ctx& c) {
  check_atomics_one<mem::kSystem, uint64_t>(c, "system scope, uint64");
  check_atomics_one<mem::kSystem, int64_t>(c, "system scope, int64");
  check_atomics_one<mem::kSystem, uint32_t>(c, "system scope, uint32");
  check_atomics_one<mem::kSystem, int32_t>(c, "system scope, int32");
  check_atomics_one<mem::kDevice, uint64_t>(c, "device scope, uint64");
  check_atomics_one<mem::kDevice, uint32_t>(c, "device scope, uint32");
  Runtime& rt = c.rt;
  auto* counter = static_cast<uint64_t*>(rt.calloc(1, sizeof(uint64_t)));
  k_atomic_storm<<<8, 128, 0, c.s>>>(c.h, counter, 0, 50);
  RMA_LAUNCHED();
  c.sync();
  rt.barrier_all();
  uint64_t total = rt.atomic_fetch<uint64_t>(counter, 0);
  uint64_t want = static_cast<uint64_t>(c.n) * 8 * 128 * 50;
  if (total != want)
    c.rep.fail("atomic_inc storm: counter " + std::to_string(total) + ", expected " + std::to_string(want));
  rt.barrier_all();
  rt.free(counter);
}

template <class Coop>
void check_barriers(Ctx& c) {
  Runtime& rt = c.rt;
  auto* slots = static_cast<uint64_t*>(rt.calloc(static_cast<size_t>(c.n), sizeof(uint64_t)));
  const char* kinds[5] = {"barrier_master", "barrier_dissemination", "barrier_all", "barrier(world team)",
                          "barrier(reversed team)"};
  // A split team in reverse order: its own slot and counters, ring neighbours swapped.
  Team reversed = rt.split(rt.world(), 0, -rt.rank());
  for (int kind = 0; kind < 5; ++kind) {
    RMA_CUDA(cudaMemset(slots, 0, sizeof(uint64_t) * static_cast<size_t>(c.n)));
    rt.barrier_all();
    const TeamHandle team = rt.device_team(kind == 4 ? reversed : rt.world());
    k_barriers<Coop><<<1, coop_threads<Coop>(), 0, c.s>>>(c.h, team, slots, 200, kind < 4 ? kind : 3, c.res);
    RMA_LAUNCHED();
    c.sync();
    uint64_t bad = c.results(1)[0];
    if (bad) {
      c.rep.fail(std::string(kinds[kind]) + " level " + coop_name<Coop>() + ": " + std::to_string(bad) +
                 " of 200 rounds saw a stale value from the left neighbour");
    }
  }
  rt.barrier_all();
  rt.free(slots);
}

// The whole device API at every level.
inline void check_device_api(Ctx& c) {
  check_level<coop::Thread>(c);
  check_level<coop::Warp>(c);
  check_level<coop::Block>(c);
  check_scalars_and_ptr(c);
  check_waits<coop::Thread>(c);
  check_waits<coop::Warp>(c);
  check_waits<coop::Block>(c);
  check_atomics(c);
  check_barriers<coop::Thread>(c);
  check_barriers<coop::Warp>(c);
  check_barriers<coop::Block>(c);
}

}  // namespace rma_checks
