// Plans on one host-memory PE, in process: random patterns under every strategy against the
// model, the errors compile() raises (each naming the transfer), rebinding, the prebuilt
// patterns, the halo exchange against its cell-by-cell reference, autotune and its cache.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <memory>
#include <numeric>

#include "gpucomm/gpucomm.hpp"
#include "gpucomm/patterns/patterns.hpp"
#include "halo_reference.hpp"
#include "pattern_testing.hpp"
#include "test_support.hpp"

namespace gpucomm::patterns {
namespace {

class HostPlans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { rt_ = testing::standalone_runtime("host", "16M"); }
  static void TearDownTestSuite() {
    delete rt_;
    rt_ = nullptr;
  }
  static Runtime* rt_;
};
Runtime* HostPlans::rt_ = nullptr;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
    return e.what();
  }
  return "(no error)";
}

std::vector<char> random_bytes(size_t n, uint64_t seed) {
  std::vector<char> v(n);
  std::mt19937_64 rng(seed);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

TEST_F(HostPlans, RandomPatternsUnderEveryStrategyMatchTheModel) {
  Runtime& rt = *rt_;
  const uint64_t seed = gpucomm::testing::test_seed();
  constexpr size_t kSpace = 4096;
  std::vector<char> host_space(kSpace);
  char* heap_space = static_cast<char*>(rt.malloc(kSpace));
  auto buffer = [&](Place p, int pe) {
    return p == Place::host ? host(host_space.data(), kSpace) : symmetric(heap_space, kSpace, pe);
  };
  for (int trial = 0; trial < 40; ++trial) {
    const uint64_t s = seed + static_cast<uint64_t>(trial);
    auto rp = testing::random_pattern(s, 1, false, kSpace, 10);
    rp.images.fill(s * 7);
    const Pattern p = testing::declare(rp.pattern, 0, true, buffer);
    testing::Images want = rp.images;
    model::apply(rp.pattern, [&](const GlobalRegion& r) { return want.at(r); });
    for (Strategy st : all_strategies()) {
      std::memcpy(host_space.data(), rp.images.space(Place::host, 0, kSpace).data(), kSpace);
      std::memcpy(heap_space, rp.images.space(Place::symmetric, 0, kSpace).data(), kSpace);
      CompileOptions o;
      o.strategy = st;
      Plan plan;
      try {
        plan = p.compile(rt, o);
      } catch (const Error& e) {
        // Only tree and ring may refuse a pattern, and only when it is not shaped for them.
        ASSERT_TRUE(st == Strategy::tree || st == Strategy::ring) << e.what();
        continue;
      }
      plan.launch();
      plan.launch();  // twice: idempotent patterns stay the same
      const std::string note =
          "trial " + std::to_string(trial) + ", " + strategy_name(st) + ", " + gpucomm::testing::seed_note(s);
      ASSERT_EQ(0, std::memcmp(host_space.data(), want.space(Place::host, 0, kSpace).data(), kSpace)) << note;
      ASSERT_EQ(0, std::memcmp(heap_space, want.space(Place::symmetric, 0, kSpace).data(), kSpace)) << note;
    }
  }
  rt.free(heap_space);
}

TEST_F(HostPlans, CompileNamesTheTransferThatIsWrong) {
  Runtime& rt = *rt_;
  std::vector<char> a(1024), b(1024);
  char* sym = static_cast<char*>(rt.malloc(1024));
  {
    Pattern p("overlap");
    p.add(host(a.data(), 1024), 0, host(b.data(), 1024), 0, 100);
    TransferOptions o;
    o.label = "second";
    p.add(host(a.data(), 1024), 50, host(b.data(), 1024), 200, 100, o);
    const std::string e = error_of([&] { p.compile(rt); });
    EXPECT_NE(e.find("write overlapping destinations"), std::string::npos) << e;
    EXPECT_NE(e.find("'second'"), std::string::npos) << e;
  }
  {
    Pattern p("hazard");
    p.add(host(a.data(), 1024), 0, host(b.data(), 1024), 0, 100);
    p.add(host(b.data(), 1024), 500, host(a.data(), 1024), 50, 10);
    EXPECT_NE(error_of([&] { p.compile(rt); }).find("no dependency orders them"), std::string::npos);
    p.depends(1, 0);
    EXPECT_NO_THROW(p.compile(rt));
  }
  {
    Pattern p("self");
    p.add(host(a.data(), 1024), 0, host(a.data(), 1024), 10, 100);
    EXPECT_NE(error_of([&] { p.compile(rt); }).find("reads bytes it writes"), std::string::npos);
  }
  {
    Pattern p("cycle");
    p.add(host(a.data(), 1024), 0, host(b.data(), 1024), 0, 10);
    p.add(host(a.data(), 1024), 100, host(b.data(), 1024), 100, 10);
    p.depends(0, 1);
    p.depends(1, 0);
    EXPECT_NE(error_of([&] { p.compile(rt); }).find("cycle"), std::string::npos);
  }
  {
    Pattern p("reach");
    p.add(symmetric(sym, 1024, 3), host(a.data(), 1024));
    EXPECT_NE(error_of([&] { p.compile(rt); }).find("the job has 1 PEs"), std::string::npos);
    Pattern q("heap");
    q.add(symmetric(a.data(), 1024, 0), host(b.data(), 1024));
    EXPECT_NE(error_of([&] { q.compile(rt); }).find("does not lie inside the symmetric heap"), std::string::npos);
    Pattern d("device");
    d.add(device(a.data(), 1024), host(b.data(), 1024));
    EXPECT_NE(error_of([&] { d.compile(rt); }).find("host-memory PEs have no device memory"), std::string::npos);
  }
  {
    Pattern p("engine");
    TransferOptions o;
    o.engine = Engine::fused;
    p.add(host(a.data(), 1024), host(b.data(), 1024), o);
    EXPECT_NE(error_of([&] { p.compile(rt); }).find("host-memory PE"), std::string::npos);
    Pattern q("strategy");
    q.add(host(a.data(), 1024), 0, host(b.data(), 1024), 0, 10);
    q.add(host(a.data(), 1024), 10, host(b.data(), 1024), 100, 10);
    CompileOptions co;
    co.strategy = Strategy::tree;
    EXPECT_NE(error_of([&] { q.compile(rt, co); }).find("tree cannot serve"), std::string::npos);
  }
  rt.free(sym);
}

TEST_F(HostPlans, RebindMovesBuffersWithoutRecompiling) {
  Runtime& rt = *rt_;
  std::vector<char> src = random_bytes(512, 1), src2 = random_bytes(512, 2), dst(512, 0), dst2(512, 0);
  char* sym = static_cast<char*>(rt.calloc(2, 512));
  Pattern p("rebind");
  p.add(box(host(dst.data(), 512), 0, 16, 8, 64), box(host(src.data(), 512), 0, 16, 8, 32));
  p.add(symmetric(sym, 512, 0), host(src.data(), 512));
  Plan plan = p.compile(rt);
  const Schedule before = plan.schedule();
  plan.rebind(dst.data(), dst2.data());
  plan.rebind(src.data(), src2.data());
  plan.rebind(sym, sym + 512);
  plan.launch();
  EXPECT_EQ(plan.schedule().strategy, before.strategy);
  for (size_t r = 0; r < 8; ++r) EXPECT_EQ(0, std::memcmp(dst2.data() + r * 64, src2.data() + r * 32, 16));
  EXPECT_EQ(0, std::memcmp(sym + 512, src2.data(), 512));
  EXPECT_EQ(dst, std::vector<char>(512, 0));
  EXPECT_NE(error_of([&] { plan.rebind(dst.data(), dst2.data()); }).find("not the start of a buffer"),
            std::string::npos);
  // A destination moved onto a source the plan reads: refused, and the plan keeps its addresses.
  EXPECT_NE(error_of([&] { plan.rebind(dst2.data(), src2.data()); }).find("reads bytes"), std::string::npos);
  std::fill(dst2.begin(), dst2.end(), 0);
  plan.launch();
  EXPECT_EQ(0, std::memcmp(dst2.data(), src2.data(), 16));
  plan = Plan();
  rt.free(sym);
}

TEST_F(HostPlans, PrebuiltPatternsReturnWhatTheyDeclare) {
  Runtime& rt = *rt_;
  constexpr size_t kBlock = 256;
  std::vector<char> src = random_bytes(4 * kBlock, 3), out(4 * kBlock, 0);
  std::vector<std::vector<char>> parts(4, std::vector<char>(kBlock, 0));
  std::vector<Region> part_regions;
  part_regions.reserve(parts.size());
  for (auto& v : parts) part_regions.push_back(whole(host(v.data(), kBlock)));
  // scatter returns its pattern (and every prebuilt one is sealed)
  const Pattern sc = scatter(whole(host(src.data(), src.size())), part_regions);
  EXPECT_EQ(sc.size(), 4u);
  EXPECT_TRUE(sc.sealed());
  EXPECT_EQ(sc.kind(), Kind::scatter);
  sc.compile(rt).launch();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(0, std::memcmp(parts[i].data(), src.data() + i * kBlock, kBlock));
  gather(whole(host(out.data(), out.size())), part_regions).compile(rt).launch();
  EXPECT_EQ(out, src);
  for (auto& v : parts) std::fill(v.begin(), v.end(), 0);
  for (Strategy st : all_strategies()) {
    CompileOptions o;
    o.strategy = st;
    broadcast(range(host(src.data(), src.size()), 0, kBlock), part_regions).compile(rt, o).launch();
    for (auto& v : parts) EXPECT_EQ(0, std::memcmp(v.data(), src.data(), kBlock)) << strategy_name(st);
  }
  // The job-wide forms on a job of one PE.
  char* sym = static_cast<char*>(rt.calloc(4, kBlock));
  broadcast(rt, host(src.data(), kBlock), sym, 0).compile(rt).launch();
  EXPECT_EQ(0, std::memcmp(sym, src.data(), kBlock));
  scatter(rt, host(src.data() + kBlock, kBlock), sym + kBlock, kBlock, 0).compile(rt).launch();
  EXPECT_EQ(0, std::memcmp(sym + kBlock, src.data() + kBlock, kBlock));
  gather(rt, sym, kBlock, host(out.data(), kBlock), 0).compile(rt).launch();
  EXPECT_EQ(0, std::memcmp(out.data(), sym, kBlock));
  EXPECT_TRUE(all_gather(rt, nullptr, sym, kBlock).empty());
  rt.free(sym);
}

void fill_field(std::vector<char>& f, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (char& c : f) c = static_cast<char>(rng());
}

TEST_F(HostPlans, HaloExchangeMatchesTheCellByCellReference) {
  Runtime& rt = *rt_;
  const uint64_t seed = gpucomm::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 30; ++trial) {
    testing::HaloCase h;
    h.ndim = 1 + trial % 3;
    h.elem = size_t{1} << (rng() % 4);
    h.corners = trial % 5 != 0;
    for (int a = 0; a < h.ndim; ++a) {
      h.ghost[static_cast<size_t>(a)] = 1 + rng() % 3;
      h.dims[static_cast<size_t>(a)] = 3 * h.ghost[static_cast<size_t>(a)] + rng() % 6;
      h.periodic[static_cast<size_t>(a)] = rng() % 4 != 0;
    }
    if (trial % 3 == 1) h.pitch = h.dims[0] * h.elem + 8 * (rng() % 4);  // a sub-array of a wider allocation
    if (trial % 3 == 2) h.plane_pitch = h.dims[1] * h.row() + 16;
    std::vector<std::vector<char>> want(1, std::vector<char>(h.bytes()));
    fill_field(want[0], seed + static_cast<uint64_t>(trial));
    // The field in host memory or in the symmetric heap.
    const bool in_heap = trial % 2 == 0;
    char* data = in_heap ? static_cast<char*>(rt.malloc(h.bytes())) : new char[h.bytes()];
    std::memcpy(data, want[0].data(), h.bytes());
    testing::halo_reference(want, h);
    const Field f = h.field(data);
    const HaloOptions o = h.options();
    // The exchange is idempotent: every strategy runs on the data the previous one left.
    for (Strategy st : {Strategy::automatic, Strategy::left_right, Strategy::pairwise}) {
      CompileOptions co;
      co.strategy = st;
      const Pattern p = halo(rt, f, o);
      p.compile(rt, co).launch();
      EXPECT_EQ(0, std::memcmp(data, want[0].data(), h.bytes()))
          << "trial " << trial << " (" << h.ndim << "-D, ghosts " << h.ghost[0] << "/" << h.ghost[1] << "/"
          << h.ghost[2] << ", corners " << h.corners << "), " << strategy_name(st) << ", "
          << gpucomm::testing::seed_note(seed);
    }
    if (in_heap) {
      rt.free(data);
    } else {
      delete[] data;
    }
  }
}

TEST_F(HostPlans, ThePeriodicThreeDimensionalHaloTakesTwoLines) {
  Runtime& rt = *rt_;
  std::vector<double> u(size_t{10} * 12 * 14);
  std::iota(u.begin(), u.end(), 0.0);
  // Declared and run with the library's own calls:
  Plan halo_plan = halo(rt, Field::of(u.data(), {10, 12, 14}), {.ghost = 1, .periodic = true}).compile(rt);
  halo_plan.launch();
  // Ghost corner (0, 0, 0) holds interior corner (8, 10, 12).
  EXPECT_EQ(u[0], static_cast<double>(8 + 10 * (10 + 12 * 12)));
}

TEST_F(HostPlans, AutotunePicksAStrategyAndCachesIt) {
  Runtime& rt = *rt_;
  std::vector<char> src = random_bytes(size_t{1} << 16, 5);
  std::vector<std::vector<char>> dsts(4, std::vector<char>(size_t{1} << 16));
  std::vector<Region> regions;
  regions.reserve(dsts.size());
  for (auto& d : dsts) regions.push_back(whole(host(d.data(), d.size())));
  CompileOptions o;
  o.autotune = true;
  o.autotune_iterations = 2;
  Plan first = broadcast(whole(host(src.data(), src.size())), regions).compile(rt, o);
  EXPECT_TRUE(first.autotuned());
  EXPECT_NE(first.describe().find("autotune ("), std::string::npos) << first.describe();
  Plan again = broadcast(whole(host(src.data(), src.size())), regions).compile(rt, o);
  EXPECT_EQ(again.strategy(), first.strategy());
  EXPECT_NE(again.describe().find("autotune (cached)"), std::string::npos) << again.describe();
  again.launch();
  for (auto& d : dsts) EXPECT_EQ(d, src);
}

}  // namespace
}  // namespace gpucomm::patterns
