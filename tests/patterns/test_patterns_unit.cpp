// The pattern layer without a job or a GPU: boxes, pattern checks, strategies and the cost model
// on synthetic topologies, and random patterns whose schedules (every strategy that applies) run
// on CPU images against the model.
#include <gtest/gtest.h>

#include <set>

#include "box.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/fabric.hpp"
#include "gpucomm/patterns/model.hpp"
#include "gpucomm/patterns/pattern.hpp"
#include "gpucomm/patterns/schedule.hpp"
#include "pattern_testing.hpp"
#include "test_support.hpp"

namespace gpucomm::patterns {
namespace {

using testing::Images;

std::set<uint64_t> bytes_of(uint64_t base, const Box& b) {
  std::set<uint64_t> s;
  detail::for_each_row(b, [&](size_t off) {
    for (size_t x = 0; x < b.width; ++x) s.insert(base + off + x);
  });
  return s;
}

TEST(PatternBox, ChecksNameWhatIsWrong) {
  EXPECT_EQ(detail::check_box(Box{0, 16, 4, 1, 16, 0}, 64), "");
  EXPECT_NE(detail::check_box(Box{0, 16, 4, 1, 8, 0}, 1024).find("rows would overlap"), std::string::npos);
  EXPECT_NE(detail::check_box(Box{8, 16, 4, 1, 16, 0}, 64).find("past the 64-byte buffer"), std::string::npos);
  EXPECT_NE(detail::check_box(Box{0, 8, 2, 3, 8, 8}, 1024).find("planes would overlap"), std::string::npos);
  EXPECT_NE(detail::check_box(Box{0, 0, 1, 1, 0, 0}, 64).find("no bytes"), std::string::npos);
  EXPECT_NE(detail::check_box(Box{0, 8, SIZE_MAX / 2, 1, 16, 0}, 64).find("overflow"), std::string::npos);
}

TEST(PatternBox, OverlapIsExactOnRandomBoxes) {
  const uint64_t seed = gpucomm::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 3000; ++trial) {
    const bool sa = rng() % 3 != 0, sb = rng() % 3 != 0;
    Box a = testing::random_box(rng, 512, sa), b = testing::random_box(rng, 512, sb);
    if (rng() % 2) {  // same array: same pitches
      b.pitch = a.pitch;
      b.plane_pitch = a.plane_pitch;
      if (b.width > b.row_pitch() || detail::check_box(b, 4096) != "") b = a;
    }
    const uint64_t ba = rng() % 64, bb = rng() % 64;
    const auto x = bytes_of(ba, a), y = bytes_of(bb, b);
    bool expect = false;
    for (uint64_t v : x) expect = expect || y.count(v);
    ASSERT_EQ(detail::boxes_overlap(ba, a, bb, b), expect)
        << "trial " << trial << ", " << gpucomm::testing::seed_note(seed);
  }
}

TEST(PatternBox, MergingRowsKeepsTheBytes) {
  const uint64_t seed = gpucomm::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    Box d = testing::random_box(rng, 2048, true);
    if (rng() % 2) d.pitch = d.width;                       // packed rows
    if (rng() % 2) d.plane_pitch = d.rows * d.row_pitch();  // packed planes
    Box s = d;
    s.offset = rng() % 100;
    if (rng() % 3 == 0) s.pitch = s.width + 4;
    Box md = d, ms = s;
    detail::merge_rows(md, ms);
    ASSERT_EQ(bytes_of(0, md), bytes_of(0, d)) << gpucomm::testing::seed_note(seed);
    ASSERT_EQ(bytes_of(0, ms), bytes_of(0, s)) << gpucomm::testing::seed_note(seed);
    ASSERT_EQ(md.width, ms.width);
    ASSERT_EQ(md.rows, ms.rows);
    ASSERT_EQ(md.planes, ms.planes);
  }
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    return e.what();
  }
  return "(no error)";
}

TEST(Pattern, AddChecksEachTransferAndNamesIt) {
  char a[256], b[256];
  Pattern p;
  p.add(host(a, 256), 0, host(b, 256), 0, 64);
  EXPECT_NE(error_of([&] { p.add(host(a, 256), 200, host(b, 256), 0, 64); }).find("transfer #1"), std::string::npos);
  EXPECT_NE(error_of([&] { p.add(host(a, 256), host(b, 128)); }).find("different sizes"), std::string::npos);
  TransferOptions named;
  named.label = "x face";
  EXPECT_NE(
      error_of([&] { p.add(box(host(a, 256), 0, 8, 4, 4), box(host(b, 256), 0, 8, 4, 8), named); }).find("'x face'"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { p.add(box(host(a, 256), 0, 8, 4, 8), box(host(b, 256), 0, 16, 2, 16)); }).find("shapes differ"),
      std::string::npos);
  EXPECT_NE(error_of([&] { p.depends(0, 7); }).find("not a transfer"), std::string::npos);
  EXPECT_EQ(p.size(), 1u);
}

TEST(Pattern, PrebuiltPatternsAreSealed) {
  char a[64], b[64];
  Pattern p;
  p.add(host(a, 64), host(b, 64));
  p.seal_as(Kind::broadcast);
  EXPECT_NE(error_of([&] { p.add(host(a, 64), host(b, 64)); }).find("prebuilt broadcast"), std::string::npos);
  EXPECT_NE(error_of([&] { p.depends(0, 0); }).find("cannot be changed"), std::string::npos);
  Pattern e = p.editable();
  EXPECT_FALSE(e.sealed());
  EXPECT_EQ(e.kind(), Kind::custom);
  e.add(host(b, 64), host(a, 64));
  EXPECT_EQ(e.size(), 2u);
  EXPECT_EQ(p.size(), 1u);
}

TEST(Strategy, EveryNameParsesAndEveryValueIsImplemented) {
  for (Strategy s : all_strategies()) EXPECT_EQ(parse_strategy(strategy_name(s)), s);
  EXPECT_EQ(parse_strategy("auto"), Strategy::automatic);
  EXPECT_NE(error_of([] { parse_strategy("knapsack"); }).find("not a strategy"), std::string::npos);
}

// ---- job-wide patterns on synthetic fabrics ----

GlobalRegion sym(int pe, uint64_t offset, uint64_t bytes) {
  GlobalRegion r;
  r.place = Place::symmetric;
  r.pe = pe;
  r.address = 0;
  r.bytes = offset + bytes;
  r.box = Box{offset, bytes, 1, 1, 0, 0};
  return r;
}

GlobalPattern broadcast_of(int pes, int root, uint64_t bytes) {
  GlobalPattern g;
  g.name = "broadcast";
  g.kind = Kind::broadcast;
  for (int q = 0; q < pes; ++q) {
    if (q == root) continue;
    g.transfers.push_back(GlobalTransfer{root, sym(q, 0, bytes), sym(root, 0, bytes), Engine::automatic, 0, 0, {}, ""});
  }
  return g;
}

GlobalPattern all_gather_of(int pes, uint64_t block) {
  GlobalPattern g;
  g.name = "all_gather";
  g.kind = Kind::all_gather;
  for (int p = 0; p < pes; ++p) {
    for (int q = 0; q < pes; ++q) {
      if (p != q) {
        g.transfers.push_back(
            GlobalTransfer{p, sym(q, p * block, block), sym(p, p * block, block), Engine::automatic, 0, 0, {}, ""});
      }
    }
  }
  for (auto& t : g.transfers) t.dst.bytes = t.src.bytes = pes * block;
  return g;
}

// A 1-D halo on a line (or ring) of PEs: each PE's boundary slab to its neighbours' ghosts.
GlobalPattern line_halo_of(int pes, uint64_t bytes, bool periodic) {
  GlobalPattern g;
  g.name = "halo";
  g.kind = Kind::halo;
  const uint64_t n = 4 * bytes;  // [ghost | interior 2 slabs | ghost]
  for (int p = 0; p < pes; ++p) {
    for (int dir : {+1, -1}) {
      int q = p + dir;
      if (q < 0 || q >= pes) {
        if (!periodic) continue;
        q = (q + pes) % pes;
      }
      GlobalRegion src = sym(p, dir > 0 ? 2 * bytes : bytes, bytes), dst = sym(q, dir > 0 ? 0 : 3 * bytes, bytes);
      src.bytes = dst.bytes = n;
      g.transfers.push_back(GlobalTransfer{p, dst, src, Engine::automatic, static_cast<int8_t>(dir), 0, {}, ""});
    }
  }
  return g;
}

Images images_for(const GlobalPattern& g, uint64_t seed) {
  Images img;
  for (const auto& t : g.transfers)
    for (const GlobalRegion* r : {&t.dst, &t.src}) img.space(r->place, r->pe, r->address + r->bytes);
  img.fill(seed);
  return img;
}

// Every strategy that applies: data like the model's, every byte once, and no link conflicts for
// the strategies in `conflict_free`.
void check_all_strategies(const GlobalPattern& g, const Fabric& f, uint64_t seed,
                          const std::set<Strategy>& conflict_free, const std::string& what) {
  Images want = images_for(g, seed);
  model::apply(g, [&](const GlobalRegion& r) { return want.at(r); });
  for (Strategy s : all_strategies()) {
    if (!applies(s, g, f)) continue;
    ScheduleOptions o;
    o.strategy = s;
    const Schedule sc = build_schedule(g, f, s, o);
    Images got = images_for(g, seed);
    testing::run_schedule(sc, got);
    EXPECT_EQ(got.spaces, want.spaces) << what << ": strategy " << strategy_name(s) << " moves other bytes, "
                                       << gpucomm::testing::seed_note(seed);
    const auto cov = model::write_coverage(g, sc);
    EXPECT_TRUE(cov.empty()) << what << ": " << strategy_name(s) << ": " << (cov.empty() ? "" : cov[0]);
    if (conflict_free.count(s)) {
      const auto c = link_conflicts(sc, f);
      EXPECT_TRUE(c.empty()) << what << ": " << strategy_name(s) << ": " << (c.empty() ? "" : c[0]);
    }
  }
}

TEST(Strategy, PrebuiltShapesOnSyntheticFabricsMoveTheRightBytesWithoutConflicts) {
  const uint64_t seed = gpucomm::testing::test_seed();
  const auto t2 = nvlink_topology(2, 18), t8 = nvlink_topology(8, 18);
  const auto p4 = pcie_tree_topology(1, 2, 2), p8 = pcie_tree_topology(2, 2, 2);
  const Fabric nv2(t2, one_pe_per_gpu(t2)), nv8(t8, one_pe_per_gpu(t8));
  const Fabric pcie4(p4, one_pe_per_gpu(p4)), pcie8(p8, one_pe_per_gpu(p8));
  using S = Strategy;
  // Neighbour exchanges: left-right is free of conflicts on every fabric here; pairwise except on
  // the 8-GPU tree, where pairs (1,2) and (3,4) share a switch's uplink - as in the literature,
  // only left-right stays free of contention beyond four GPUs on a PCIe tree.
  for (const Fabric* f : {&nv2, &nv8, &pcie4, &pcie8}) {
    const int n = f->num_pes();
    const std::set<S> halo = f == &pcie8 ? std::set<S>{S::left_right} : std::set<S>{S::left_right, S::pairwise};
    const std::string on = " on " + std::to_string(n) + (f == &pcie4 || f == &pcie8 ? " PCIe GPUs" : " NVLink GPUs");
    for (int root : {0, n - 1})
      check_all_strategies(broadcast_of(n, root, 4096), *f, seed, {S::tree, S::ring}, "broadcast" + on);
    check_all_strategies(all_gather_of(n, 512), *f, seed, {S::ring}, "all_gather" + on);
    check_all_strategies(line_halo_of(n, 256, false), *f, seed, halo, "line halo" + on);
    // Periodic: the pair closing the ring crosses the same uplinks as the middle pair.
    const bool pcie = f == &pcie4 || f == &pcie8;
    check_all_strategies(line_halo_of(n, 256, true), *f, seed,
                         n <= 2 ? std::set<S>{} : (pcie ? std::set<S>{S::left_right} : halo), "ring halo" + on);
  }
}

TEST(Strategy, TreeAndRingApplyOnlyWhereTheyCan) {
  const Fabric nv8(nvlink_topology(8, 18), one_pe_per_gpu(nvlink_topology(8, 18)));
  std::string why;
  EXPECT_TRUE(applies(Strategy::tree, broadcast_of(8, 3, 64), nv8));
  EXPECT_FALSE(applies(Strategy::tree, all_gather_of(8, 64), nv8, &why));
  EXPECT_NE(why.find("different sources"), std::string::npos) << why;
  EXPECT_TRUE(applies(Strategy::ring, all_gather_of(8, 64), nv8));
  EXPECT_FALSE(applies(Strategy::ring, line_halo_of(8, 64, true), nv8, &why));
  ScheduleOptions o;
  o.strategy = Strategy::tree;
  EXPECT_NE(error_of([&] { build_schedule(line_halo_of(8, 64, true), nv8, Strategy::tree, o); }).find("cannot serve"),
            std::string::npos);
}

TEST(Strategy, PhasesFollowTheNamedOrders) {
  const auto t = pcie_tree_topology(1, 2, 2);
  const Fabric f(t, one_pe_per_gpu(t));
  ScheduleOptions o;
  // Pairwise on a line of 4: pairs (0,1) and (2,3), then (1,2) - the even-odd, odd-even phases.
  const GlobalPattern h = line_halo_of(4, 64, false);
  const Schedule pw = build_schedule(h, f, Strategy::pairwise, o);
  EXPECT_EQ(pw.phases, 2u);
  for (const Step& s : pw.steps) {
    const int lo = std::min(s.from.pe, s.to.pe);
    EXPECT_EQ(s.phase, lo % 2 == 0 ? 0u : 1u) << s.from.pe << "->" << s.to.pe;
  }
  // Left-right: everything to the right first.
  const Schedule lr = build_schedule(h, f, Strategy::left_right, o);
  EXPECT_EQ(lr.phases, 2u);
  for (const Step& s : lr.steps) EXPECT_EQ(s.phase, s.to.pe > s.from.pe ? 0u : 1u);
  // Tree on 8: log2(8) = 3 rounds, the first crossing from the root's switch group.
  const auto t8 = pcie_tree_topology(2, 2, 2);
  const Fabric f8(t8, one_pe_per_gpu(t8));
  const Schedule tr = build_schedule(broadcast_of(8, 0, 1 << 20), f8, Strategy::tree, o);
  EXPECT_EQ(tr.phases, 3u);
  for (const Step& s : tr.steps) {
    if (s.phase == 0) {
      EXPECT_NE(f8.group(s.from), f8.group(s.to)) << "the first hop stays in its group";
    }
  }
  // Round: the k-th transfer of each link in phase k.
  const Schedule rd = build_schedule(line_halo_of(2, 64, true), f, Strategy::round, o);
  EXPECT_EQ(rd.phases, 2u);
}

TEST(CostModel, ChoicesOnSyntheticTopologies) {
  ScheduleOptions o;
  // 2 GPUs over NVLink: nothing beats sending everything at once.
  const auto t2 = nvlink_topology(2, 18);
  const Fabric nv2(t2, one_pe_per_gpu(t2));
  for (uint64_t b : {uint64_t{4096}, uint64_t{64} << 20}) {
    EXPECT_EQ(plan_schedule(broadcast_of(2, 0, b), nv2, o).strategy, Strategy::all_at_once) << b;
    EXPECT_EQ(plan_schedule(line_halo_of(2, b, true), nv2, o).strategy, Strategy::all_at_once) << b;
  }
  // 8 GPUs on an NVLink switch: small broadcasts at once, large ones pipelined around the ring
  // (the root's port is the bottleneck otherwise); all-gathers load every port alike at once.
  const auto t8 = nvlink_topology(8, 18);
  const Fabric nv8(t8, one_pe_per_gpu(t8));
  EXPECT_EQ(plan_schedule(broadcast_of(8, 0, 4096), nv8, o).strategy, Strategy::all_at_once);
  const Schedule big = plan_schedule(broadcast_of(8, 0, uint64_t{256} << 20), nv8, o);
  EXPECT_EQ(big.strategy, Strategy::ring);
  EXPECT_GT(big.chunks, 1u);
  EXPECT_EQ(plan_schedule(all_gather_of(8, 1 << 20), nv8, o).strategy, Strategy::all_at_once);
  // A PCIe tree of 4 GPUs (2 switches): a large halo avoids the contention of sending both ways
  // at once (left-right; pairwise ties and loses the tie), a small one goes at once.
  const auto t4 = pcie_tree_topology(1, 2, 2);
  const Fabric pc4(t4, one_pe_per_gpu(t4));
  EXPECT_EQ(plan_schedule(line_halo_of(4, 4096, false), pc4, o).strategy, Strategy::all_at_once);
  EXPECT_EQ(plan_schedule(line_halo_of(4, uint64_t{16} << 20, false), pc4, o).strategy, Strategy::left_right);
  // 8 GPUs in 2 sockets: the socket link is the slowest segment; a large broadcast crosses it once.
  const auto t8p = pcie_tree_topology(2, 2, 2);
  const Fabric pc8(t8p, one_pe_per_gpu(t8p));
  const Schedule b = plan_schedule(broadcast_of(8, 0, uint64_t{256} << 20), pc8, o);
  EXPECT_TRUE(b.strategy == Strategy::ring || b.strategy == Strategy::tree) << strategy_name(b.strategy);
}

TEST(RandomPatterns, EveryStrategyMovesWhatTheModelMoves) {
  const uint64_t seed = gpucomm::testing::test_seed();
  const auto tp = pcie_tree_topology(1, 2, 2);
  for (int trial = 0; trial < 60; ++trial) {
    const int pes = 1 + trial % 4;
    const bool gpu = trial % 3 != 0;
    auto rp = testing::random_pattern(seed + static_cast<uint64_t>(trial), pes, gpu);
    std::vector<PeInfo> infos;
    infos.reserve(pes);
    for (int p = 0; p < pes; ++p) infos.push_back(PeInfo{0, gpu ? p : -1, false});
    const Fabric f(tp, infos);
    const std::string what = "trial " + std::to_string(trial) + " (" + std::to_string(rp.pattern.transfers.size()) +
                             " transfers, " + gpucomm::testing::seed_note(seed + trial) + ")";
    check_all_strategies(rp.pattern, f, seed * 31 + static_cast<uint64_t>(trial), {}, what);
  }
}

TEST(Schedule, GpusTheTopologyDoesNotListStayGpus) {
  // A GPU PE whose GPU is missing from the planning topology: device endpoints, GPU engines.
  const Fabric f(topology::Topology{}, {PeInfo{0, -1, true}, PeInfo{0, -1, true}});
  const Schedule s = plan_schedule(broadcast_of(2, 0, 1 << 20), f, ScheduleOptions{});
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_TRUE(s.steps[0].from.device && s.steps[0].to.device);
  EXPECT_EQ(s.steps[0].engine, Engine::copy_engine);
  const Fabric f4(topology::Topology{}, std::vector<PeInfo>(4, PeInfo{0, -1, true}));
  check_all_strategies(broadcast_of(4, 1, 4096), f4, 7, {}, "broadcast between unlisted GPUs");
  check_all_strategies(line_halo_of(4, 256, true), f4, 7, {}, "ring halo between unlisted GPUs");
}

TEST(Schedule, SignalsFollowTheTouchesAndDependencies) {
  const auto t = nvlink_topology(4, 4);
  const Fabric f(t, one_pe_per_gpu(t));
  ScheduleOptions o;
  o.strategy = Strategy::tree;
  const Schedule s = build_schedule(broadcast_of(4, 0, 1024), f, Strategy::tree, o);
  // Every step that depends on another PE's step has a dependency signal before its phase.
  for (const Step& st : s.steps) {
    for (uint32_t d : st.after) {
      const Step& e = s.steps[d];
      if (e.owner == st.owner) continue;
      bool found = false;
      for (const SyncEdge& x : s.edges) {
        found = found || (x.from == e.owner && x.to == st.owner && x.from_boundary == e.phase + 1 &&
                          x.to_boundary <= st.phase && x.reason == SyncReason::dependency);
      }
      EXPECT_TRUE(found) << "step of rank " << st.owner << " in phase " << st.phase;
    }
  }
  // Slots are dense per target.
  for (int pe = 0; pe < 4; ++pe) {
    std::set<uint32_t> slots;
    for (const SyncEdge& x : s.edges)
      if (x.to == pe) slots.insert(x.slot);
    EXPECT_EQ(slots.size(), s.slots[static_cast<size_t>(pe)]);
  }
  ScheduleOptions quiet;
  quiet.strategy = Strategy::all_at_once;
  quiet.entry_sync = quiet.exit_sync = false;
  EXPECT_TRUE(build_schedule(broadcast_of(4, 0, 1024), f, Strategy::all_at_once, quiet).edges.empty());
}

}  // namespace
}  // namespace gpucomm::patterns
