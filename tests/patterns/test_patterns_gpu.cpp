// Plans on one GPU PE (label gpu; skipped without a GPU): every combination of source and
// destination memory (pinned host, pageable host registered or staged, device, the symmetric
// heap) with contiguous and strided boxes and every engine that can serve it, eager and replayed
// from a CUDA graph, against the model; graph replay after source changes and after rebinding;
// random patterns under every strategy; more fused transfers than one kernel takes; the 3-D
// periodic halo of a device field against the cell-by-cell reference.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <functional>

#include "cuda_assert.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/patterns/patterns.hpp"
#include "halo_reference.hpp"
#include "pattern_testing.hpp"
#include "test_support.hpp"

namespace gpucomm::patterns {
namespace {

class GpuPlans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (gpucomm::testing::gpu_count() < 1) return;
    setenv("GPUCOMM_TIMEOUT", "30", 1);
    rt_ = testing::standalone_runtime("gpu", "64M");
  }
  static void TearDownTestSuite() {
    delete rt_;
    rt_ = nullptr;
  }
  void SetUp() override { GPUCOMM_REQUIRE_GPUS(1); }
  static Runtime* rt_;
};
Runtime* GpuPlans::rt_ = nullptr;

// A buffer of one kind of memory, with host-side access for the checks.
struct Mem {
  enum Kind { pinned, pageable, staged, dev, sym } kind;
  size_t bytes;
  char* ptr = nullptr;
  Runtime* rt;
  std::vector<char> pageable_store;
  Mem(Kind k, size_t n, Runtime& r) : kind(k), bytes(n), rt(&r) {
    switch (k) {
      case pinned: {
        void* p = nullptr;
        EXPECT_EQ(cudaMallocHost(&p, n), cudaSuccess);
        ptr = static_cast<char*>(p);
        break;
      }
      case pageable:
      case staged:
        pageable_store.resize(n);
        ptr = pageable_store.data();
        break;
      case dev: {
        void* p = nullptr;
        EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess);
        ptr = static_cast<char*>(p);
        break;
      }
      case sym:
        ptr = static_cast<char*>(r.malloc(n));
        break;
    }
  }
  ~Mem() {
    if (kind == pinned) (void)cudaFreeHost(ptr);
    if (kind == dev) (void)cudaFree(ptr);
    if (kind == sym) rt->free(ptr);
  }
  Buffer buffer() const {
    switch (kind) {
      case dev:
        return device(ptr, bytes);
      case sym:
        return symmetric(ptr, bytes, rt->rank());
      default:
        return host(ptr, bytes);
    }
  }
  bool on_host() const { return kind == pinned || kind == pageable || kind == staged; }
  void write(const std::vector<char>& v) {
    ASSERT_EQ(cudaMemcpy(ptr, v.data(), bytes, cudaMemcpyDefault), cudaSuccess);
  }
  std::vector<char> read() const {
    std::vector<char> v(bytes);
    EXPECT_EQ(cudaMemcpy(v.data(), ptr, bytes, cudaMemcpyDefault), cudaSuccess);
    return v;
  }
  static const char* name(Kind k) {
    static const char* n[] = {"pinned host", "pageable host", "staged pageable host", "device", "symmetric"};
    return n[k];
  }
};

std::vector<char> random_bytes(size_t n, uint64_t seed) {
  std::vector<char> v(n);
  std::mt19937_64 rng(seed);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// The expected destination after copying sbox of `src` into dbox of `dst`.
std::vector<char> expect_copy(std::vector<char> dst, const Box& dbox, const std::vector<char>& src, const Box& sbox) {
  model::copy_box(dst.data(), dbox, src.data(), sbox);
  return dst;
}

TEST_F(GpuPlans, EveryHostDeviceCombinationEngineAndGraph) {
  Runtime& rt = *rt_;
  const uint64_t seed = gpucomm::testing::test_seed();
  constexpr size_t kBytes = 1 << 20;
  const Box layouts[] = {
      Box{4096, 256 << 10, 1, 1, 0, 0},     // contiguous 256 KB
      Box{8, 8, 2048, 1, 512, 0},           // 2-D, 8-byte rows (an x-face)
      Box{64, 48, 40, 12, 1024, 64 << 10},  // 3-D
      Box{3, 100, 7, 3, 129, 1000},         // 3-D, odd sizes and pitches (no multiple of the row pitch)
  };
  const Mem::Kind kinds[] = {Mem::pinned, Mem::pageable, Mem::staged, Mem::dev, Mem::sym};
  int combos = 0;
  for (Mem::Kind sk : kinds) {
    for (Mem::Kind dk : kinds) {
      Mem src(sk, kBytes, rt), dst(dk, kBytes, rt);
      const std::vector<char> s0 = random_bytes(kBytes, seed + uint64_t{17} * sk);
      src.write(s0);
      for (const Box& lay : layouts) {
        for (Engine e : {Engine::automatic, Engine::copy_engine, Engine::fused, Engine::sm_copy, Engine::host_copy}) {
          const bool host_to_host = src.on_host() && dst.on_host();
          if ((e == Engine::host_copy) != host_to_host && e != Engine::automatic)
            continue;  // the CPU does host to host
          const bool staged = sk == Mem::staged || dk == Mem::staged;
          if ((e == Engine::fused || e == Engine::sm_copy) && (staged || sk == Mem::pageable || dk == Mem::pageable))
            continue;  // kernels need pinned (mapped) host memory
          for (bool graph : {false, true}) {
            const std::vector<char> d0 = random_bytes(kBytes, seed + 1000 + combos);
            dst.write(d0);
            Box sb = lay;
            sb.offset += 16;  // the source box elsewhere in its buffer
            Pattern p("combo");
            TransferOptions to;
            to.engine = e;
            p.add(Region{dst.buffer(), lay}, Region{src.buffer(), sb}, to);
            CompileOptions o;
            o.graph = graph;
            o.pageable = staged ? Pageable::stage : Pageable::register_memory;
            const std::string what = std::string(Mem::name(sk)) + " -> " + Mem::name(dk) + ", box " +
                                     std::to_string(lay.width) + "x" + std::to_string(lay.rows) + "x" +
                                     std::to_string(lay.planes) + ", " + engine_name(e) + (graph ? ", graph" : "") +
                                     ", " + gpucomm::testing::seed_note(seed);
            Plan plan;
            try {
              plan = p.compile(rt, o);
              plan.launch(rt.stream());
              plan.launch(rt.stream());  // replays too
              plan.synchronize();
            } catch (const Error& err) {
              ADD_FAILURE() << what << ": " << err.what();
              continue;
            }
            EXPECT_EQ(dst.read(), expect_copy(d0, lay, s0, sb)) << what;
            ++combos;
          }
        }
      }
    }
  }
  EXPECT_GT(combos, 300);
}

TEST_F(GpuPlans, GraphReplaysSeeNewDataAndRebinding) {
  Runtime& rt = *rt_;
  constexpr size_t kBytes = 64 << 10;
  Mem a(Mem::dev, kBytes, rt), b(Mem::dev, kBytes, rt), c(Mem::pinned, kBytes, rt), d(Mem::dev, kBytes, rt);
  Pattern p("replay");
  p.add(box(b.buffer(), 0, 16, 512, 64), box(a.buffer(), 8, 16, 512, 32));  // fused, strided
  p.add(c.buffer(), 0, a.buffer(), 32768, 4096);                            // copy engine to host
  CompileOptions o;
  o.graph = true;
  Plan plan = p.compile(rt, o);
  ASSERT_TRUE(plan.uses_graph());
  for (int round = 0; round < 3; ++round) {
    const auto s = random_bytes(kBytes, 100 + round);
    a.write(s);
    plan.launch(rt.stream());
    plan.synchronize();
    const auto got = b.read();
    for (size_t r = 0; r < 512; ++r)
      ASSERT_EQ(0, std::memcmp(got.data() + r * 64, s.data() + 8 + r * 32, 16)) << "round " << round << " row " << r;
    ASSERT_EQ(0, std::memcmp(c.read().data(), s.data() + 32768, 4096)) << "round " << round;
  }
  const auto s = random_bytes(kBytes, 7);
  a.write(s);
  plan.rebind(b.ptr, d.ptr);  // the graph is captured again before its next launch
  plan.launch(rt.stream());
  plan.synchronize();
  const auto got = d.read();
  for (size_t r = 0; r < 512; ++r) ASSERT_EQ(0, std::memcmp(got.data() + r * 64, s.data() + 8 + r * 32, 16)) << r;
}

TEST_F(GpuPlans, RandomPatternsUnderEveryStrategy) {
  Runtime& rt = *rt_;
  const uint64_t seed = gpucomm::testing::test_seed();
  constexpr size_t kSpace = 4096;
  Mem h(Mem::pinned, kSpace, rt), dv(Mem::dev, kSpace, rt), sy(Mem::sym, kSpace, rt);
  auto mem_of = [&](Place p) -> Mem& { return p == Place::host ? h : p == Place::device ? dv : sy; };
  for (int trial = 0; trial < 20; ++trial) {
    const uint64_t s = seed + static_cast<uint64_t>(trial);
    auto rp = testing::random_pattern(s, 1, true, kSpace, 16);
    rp.images.fill(s * 5);
    testing::Images want = rp.images;
    model::apply(rp.pattern, [&](const GlobalRegion& r) { return want.at(r); });
    const Pattern p = testing::declare(rp.pattern, 0, true, [&](Place pl, int) { return mem_of(pl).buffer(); });
    for (Strategy st : all_strategies()) {
      for (Place pl : {Place::host, Place::device, Place::symmetric}) mem_of(pl).write(rp.images.space(pl, 0, kSpace));
      CompileOptions o;
      o.strategy = st;
      o.graph = trial % 2 == 1;
      Plan plan;
      try {
        plan = p.compile(rt, o);
      } catch (const Error& e) {
        ASSERT_TRUE(st == Strategy::tree || st == Strategy::ring) << e.what();
        continue;
      }
      plan.launch(rt.stream());
      plan.synchronize();
      for (Place pl : {Place::host, Place::device, Place::symmetric}) {
        ASSERT_EQ(mem_of(pl).read(), want.space(pl, 0, kSpace))
            << place_name(pl) << " memory, trial " << trial << ", " << strategy_name(st) << ", "
            << gpucomm::testing::seed_note(s) << "\n"
            << plan.describe();
      }
    }
  }
}

TEST_F(GpuPlans, MoreFusedTransfersThanOneKernelTakes) {
  Runtime& rt = *rt_;
  constexpr size_t kN = 150, kEach = 100;
  Mem a(Mem::dev, kN * 128, rt), b(Mem::sym, kN * 128, rt);
  const auto s = random_bytes(kN * 128, 11);
  a.write(s);
  Pattern p("many");
  for (size_t i = 0; i < kN; ++i) p.add(b.buffer(), i * 128, a.buffer(), (kN - 1 - i) * 128 + 3, kEach);
  Plan plan = p.compile(rt);
  for (const Step& st : plan.schedule().steps) EXPECT_EQ(st.engine, Engine::fused);
  plan.launch(rt.stream());
  plan.synchronize();
  const auto got = b.read();
  for (size_t i = 0; i < kN; ++i)
    ASSERT_EQ(0, std::memcmp(got.data() + i * 128, s.data() + (kN - 1 - i) * 128 + 3, kEach)) << i;
}

TEST_F(GpuPlans, PeriodicThreeDimensionalHaloOfADeviceField) {
  Runtime& rt = *rt_;
  const size_t nx = 40, ny = 34, nz = 30;
  void* mem = nullptr;
  CUDA_OK(cudaMalloc(&mem, nx * ny * nz * sizeof(double)));
  auto* u = static_cast<double*>(mem);
  std::vector<std::vector<char>> want(1, random_bytes(nx * ny * nz * sizeof(double), 21));
  CUDA_OK(cudaMemcpy(u, want[0].data(), want[0].size(), cudaMemcpyHostToDevice));
  testing::HaloCase h;
  h.dims = {nx, ny, nz};
  h.ghost = {2, 2, 2};
  h.periodic = {true, true, true};
  testing::halo_reference(want, h);
  for (bool graph : {false, true}) {
    // Declared and run in two lines of user code:
    Plan halo_plan = halo(rt, Field::of(u, {nx, ny, nz}), {.ghost = 2, .periodic = true}).compile(rt, {.graph = graph});
    halo_plan.launch(rt.stream());
    halo_plan.synchronize();
    std::vector<char> got(want[0].size());
    CUDA_OK(cudaMemcpy(got.data(), u, got.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, want[0]) << (graph ? "graph" : "eager");
  }
  CUDA_OK(cudaFree(u));
}

}  // namespace
}  // namespace gpucomm::patterns
