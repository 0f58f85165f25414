// Differential tests of the GPU matching engines against the reference (ordered engines) or the
// legality checker (hash engine). Each test draws a fresh seed, printed on failure.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <sstream>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/matching/checker.hpp"
#include "gpucomm/matching/engine.hpp"
#include "gpucomm/matching/match_device.cuh"
#include "gpucomm/matching/oracle.hpp"
#include "gpucomm/matching/workload.hpp"
#include "test_support.hpp"

namespace gm = gpucomm::matching;
using gpucomm::testing::seed_note;
using gpucomm::testing::test_seed;

namespace {

struct Case {
  gm::WorkloadSpec spec;
  gm::Batch batch;
};

std::string spec_text(const gm::WorkloadSpec& s) {
  std::ostringstream os;
  os << "umq " << s.umq << " prq " << s.prq << " msgs " << s.msgs << " recvs " << s.recvs << " comms " << s.comms
     << " sources " << s.sources << " tags " << s.tags << " any_source " << s.any_source << " any_tag " << s.any_tag
     << " multiplicity " << s.multiplicity;
  return os.str();
}

// Random lists around `len` entries each.
gm::WorkloadSpec spec_for(std::mt19937_64& rng, uint32_t len, double wild, int32_t sources, int32_t tags, double mult) {
  std::uniform_int_distribution<uint32_t> around(len / 2, len);
  gm::WorkloadSpec s;
  s.prq = len;
  s.msgs = around(rng);
  s.umq = around(rng) / 2;
  s.recvs = around(rng);
  s.comms = 1 + static_cast<int32_t>(rng() % 2);
  s.sources = sources;
  s.tags = tags;
  s.any_source = wild;
  s.any_tag = wild / 2;
  s.multiplicity = mult;
  return s;
}

// Receives first, then only messages that find one: the no-unexpected precondition.
void make_no_unexpected(gm::Batch& b) {
  b.umq.clear();
  const gm::Outcome o = gm::match_reference(b);
  std::vector<char> matched_msg(1 << 20, 0);
  for (const auto& m : o.matches)  // phase-1 matches only: receives of the PRQ (handles 0..)
    if (m.recv < b.prq.size()) matched_msg[m.msg] = 1;
  std::vector<gm::Envelope> keep;
  for (const auto& m : b.msgs)
    if (matched_msg[m.handle]) keep.push_back(m);
  b.msgs = keep;
}

// Runs `engine` on all cases in one launch and compares each with the reference. Returns the
// number of cases checked.
size_t expect_reference(gm::Engine engine, const std::vector<Case>& cases, uint64_t seed, const gm::RunOptions& opt,
                        const char* label) {
  std::vector<gm::Batch> batches;
  batches.reserve(cases.size());
  for (const auto& c : cases) batches.push_back(c.batch);
  gm::DeviceBatchSet set(batches);
  set.run(engine, nullptr, opt);
  std::vector<uint32_t> status;
  const auto out = set.download(nullptr, &status);
  int failures = 0;
  for (size_t i = 0; i < cases.size() && failures < 3; ++i) {
    const std::string diff = gm::describe_difference(gm::match_reference(cases[i].batch), out[i]);
    const uint32_t err = status[i] & (gm::kStatusInfo - 1);
    if (diff.empty() && err == 0) continue;
    ++failures;
    ADD_FAILURE() << label << " (" << gm::engine_name(engine) << "), case " << i << " of " << cases.size() << ": "
                  << (diff.empty() ? "" : diff) << (err ? " status: " + gm::status_text(err) : "") << "\n"
                  << spec_text(cases[i].spec) << "\n"
                  << seed_note(seed) << "\n"
                  << gm::describe(cases[i].batch, 12);
  }
  return cases.size();
}

std::vector<Case> sweep(std::mt19937_64& rng, bool any_source, double max_len_big, bool no_unexpected) {
  const uint32_t lengths[] = {1, 2, 5, 31, 32, 33, 63, 64, 65, 127, 500, 1000, 1023, 1024, 1025, 2047, 2048, 4096};
  const double wild[] = {0.0, 0.1, 0.5};
  const std::pair<int32_t, int32_t> ranges[] = {{1, 1}, {4, 16}, {64, 1024}};
  const double mult[] = {0.0, 0.12, 0.5};
  std::vector<Case> cases;
  auto add = [&](gm::WorkloadSpec s) {
    if (!any_source) s.any_source = 0;
    Case c{s, gm::random_batch(s, rng)};
    if (no_unexpected) make_no_unexpected(c.batch);
    cases.push_back(std::move(c));
  };
  for (uint32_t len : lengths) {
    for (double w : wild) {
      for (auto r : ranges)
        for (double m : mult) add(spec_for(rng, len, w, r.first, r.second, m));
    }
  }
  // A few long queues, up to 32K entries (the reference is quadratic: keep them few).
  for (uint32_t len : {8192u, 16384u, 32768u}) {
    if (len > max_len_big) continue;
    add(spec_for(rng, len, 0.1, 16, 256, 0.12));
    add(spec_for(rng, len, 0.0, 1, 4, 0.0));
  }
  return cases;
}

class GpuMatching : public ::testing::Test {
 protected:
  void SetUp() override { GPUCOMM_REQUIRE_GPUS(1); }
};

}  // namespace

TEST_F(GpuMatching, MpiEqualsReferenceFrom1To32K) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const auto cases = sweep(rng, true, 32768, false);
  expect_reference(gm::Engine::mpi, cases, seed, {}, "automatic kernel");
  expect_reference(gm::Engine::mpi, cases, seed, {gm::Level::block, {}}, "block kernel");
}

TEST_F(GpuMatching, WarpKernelEqualsReferenceUpTo2048) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  auto cases = sweep(rng, true, 0, false);
  std::erase_if(cases, [](const Case& c) { return gm::max_targets_of(c.batch) > gm::kWarpMaxTargets; });
  expect_reference(gm::Engine::mpi, cases, seed, {gm::Level::warp, {}}, "warp kernel");
}

TEST_F(GpuMatching, NoUnexpectedEqualsReference) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const auto cases = sweep(rng, true, 16384, true);
  expect_reference(gm::Engine::no_unexpected, cases, seed, {}, "automatic kernel");
  expect_reference(gm::Engine::no_unexpected, cases, seed, {gm::Level::block, {}}, "block kernel");
}

// At least 10^6 small scenarios, many per launch: the warp kernel (direct path) and, on a
// share of them, the block kernel's direct path.
TEST_F(GpuMatching, MillionSmallScenarios) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const size_t total = 1000000, chunk = 200000;
  size_t checked = 0;
  for (size_t done = 0; done < total && !HasFailure(); done += chunk) {
    std::vector<Case> cases;
    cases.reserve(chunk);
    for (size_t i = 0; i < chunk; ++i) {
      gm::WorkloadSpec s;
      s.umq = rng() % 17;
      s.prq = rng() % 33;
      s.msgs = rng() % 33;
      s.recvs = rng() % 17;
      s.comms = 1 + static_cast<int32_t>(rng() % 2);
      s.sources = 1 + static_cast<int32_t>(rng() % 8);
      s.tags = 1 + static_cast<int32_t>(rng() % 8);
      s.any_source = (rng() % 4) * 0.15;
      s.any_tag = (rng() % 4) * 0.15;
      s.multiplicity = (rng() % 3) * 0.25;
      cases.push_back({s, gm::random_batch(s, rng)});
    }
    checked += expect_reference(gm::Engine::mpi, cases, seed, {}, "warp kernel, small scenarios");
    if (done == 0) {
      cases.resize(50000);
      expect_reference(gm::Engine::mpi, cases, seed, {gm::Level::block, {}}, "block kernel, small scenarios");
    }
  }
  EXPECT_GE(checked, total);
  std::printf("checked %zu small scenarios against the reference\n", checked);
}

TEST_F(GpuMatching, PartitionedEqualsReference) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  int tested = 0;
  for (uint32_t len : {1u, 16u, 64u, 200u, 1024u, 4096u, 16384u}) {
    for (int32_t sources : {1, 8, 64}) {
      if (len / static_cast<uint32_t>(sources) > 1024) continue;  // each partition within the warp engine's limit
      for (double tag_wild : {0.0, 0.3}) {
        gm::WorkloadSpec s = spec_for(rng, len, 0.0, sources, 32, len <= 4096 ? 0.12 : 0.0);
        s.any_tag = tag_wild;
        const gm::Batch b = gm::random_batch(s, rng);
        bool fits = true;  // every partition within the warp engine's limit (random sizes vary)
        for (const auto& p : gm::partition_by_source(b))
          fits = fits && gm::max_targets_of(p.batch) <= gm::kWarpMaxTargets;
        if (!fits) continue;
        ++tested;
        const gm::Outcome got = gm::run_partitioned_on_gpu(b);
        ASSERT_EQ(gm::describe_difference(gm::match_reference(b), got), "") << spec_text(s) << "\n"
                                                                            << seed_note(seed) << "\n"
                                                                            << gm::describe(b, 12);
      }
    }
  }
  EXPECT_GE(tested, 20) << seed_note(seed);
}

TEST_F(GpuMatching, HashGivesLegalMatchings) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  std::vector<Case> cases;
  for (uint32_t len : {1u, 7u, 32u, 100u, 512u, 1000u, 1024u, 1025u, 3000u, 8192u, 32768u}) {
    for (double m : {0.0, 0.03, 0.06, 0.12, 0.5, 1.0}) {
      for (int32_t tags : {4, 4096}) {
        if (m == 1.0 && len > 4096) continue;  // open addressing is quadratic on one key: keep it short
        gm::WorkloadSpec s = spec_for(rng, len, 0.0, 16, tags, m);
        s.any_tag = 0;
        cases.push_back({s, gm::random_batch(s, rng)});
      }
    }
  }
  std::vector<gm::Batch> batches;
  batches.reserve(cases.size());
  for (const auto& c : cases) batches.push_back(c.batch);
  gm::DeviceBatchSet set(batches);
  for (auto strategy : {gm::HashStrategy::automatic, gm::HashStrategy::linear_probing, gm::HashStrategy::double_hashing,
                        gm::HashStrategy::chained}) {
    set.restore(nullptr);
    set.run(gm::Engine::hash, nullptr, {gm::Level::automatic, strategy});
    std::vector<uint32_t> status;
    const auto out = set.download(nullptr, &status);
    int failures = 0;
    for (size_t i = 0; i < cases.size() && failures < 3; ++i) {
      const std::string why = gm::check_legal_matching(cases[i].batch, out[i]);
      const uint32_t err = status[i] & (gm::kStatusInfo - 1);
      const bool chained = strategy == gm::HashStrategy::chained;
      const bool open = strategy == gm::HashStrategy::linear_probing || strategy == gm::HashStrategy::double_hashing;
      const bool info_ok =
          (!chained || !(status[i] & gm::kInfoOpenAddressing)) && (!open || !(status[i] & gm::kInfoChained));
      if (why.empty() && !err && info_ok) continue;
      ++failures;
      ADD_FAILURE() << "hash strategy " << static_cast<int>(strategy) << ", case " << i << ": " << why
                    << (err ? " status: " + gm::status_text(err) : "") << (info_ok ? "" : " wrong strategy ran") << "\n"
                    << spec_text(cases[i].spec) << "\n"
                    << seed_note(seed) << "\n"
                    << gm::describe(cases[i].batch, 12);
    }
  }
}

TEST_F(GpuMatching, EnginesReportWhatTheyCannotTake) {
  gm::Batch wild;
  wild.prq = {{0, gm::kAnySource, 1, 0}};
  wild.msgs = {{0, 3, 1, 0}};
  for (auto e : {gm::Engine::hash, gm::Engine::partitioned}) {
    gm::DeviceBatchSet set({wild});
    set.run(e, nullptr);
    std::vector<uint32_t> status;
    const auto out = set.download(nullptr, &status);
    EXPECT_TRUE(status[0] & gm::kStatusWildcard) << gm::engine_name(e) << ": status " << status[0];
    EXPECT_TRUE(out[0].matches.empty());
    EXPECT_EQ(out[0].prq.size(), 1u);
    EXPECT_THROW(gm::run_on_gpu(e, {wild}), gpucomm::Error);
  }
  gm::Batch unexpected;  // a message before its receive
  unexpected.msgs = {{0, 1, 1, 0}};
  unexpected.recvs = {{0, 1, 1, 0}};
  for (auto level : {gm::Level::warp, gm::Level::block}) {
    gm::DeviceBatchSet set({unexpected});
    set.run(gm::Engine::no_unexpected, nullptr, {level, {}});
    std::vector<uint32_t> status;
    const auto out = set.download(nullptr, &status);
    EXPECT_TRUE(status[0] & gm::kStatusUnexpected) << "status " << status[0];
    EXPECT_EQ(gm::describe_difference(gm::match_reference(unexpected), out[0]), "");
  }
  std::mt19937_64 rng(5);
  gm::Batch long_one = gm::random_batch(spec_for(rng, 3000, 0, 4, 4, 0), rng);
  gm::DeviceBatchSet set({long_one});
  set.run(gm::Engine::mpi, nullptr, {gm::Level::warp, {}});
  std::vector<uint32_t> status;
  const auto out = set.download(nullptr, &status);
  EXPECT_TRUE(status[0] & gm::kStatusTooLong) << "status " << status[0];
  EXPECT_EQ(out[0].prq.size(), long_one.prq.size());
}

// The device API from a user kernel: one block matches a job built by hand.
namespace {
__global__ void user_kernel(gm::MatchJob job) {
  __shared__ gm::BlockMatchShared s;
  gm::match_ordered(gpucomm::coop::Block{}, job, s);
}
}  // namespace

TEST_F(GpuMatching, DeviceApiFromUserKernel) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  const gm::WorkloadSpec spec = spec_for(rng, 700, 0.2, 8, 16, 0.1);
  const gm::Batch b = gm::random_batch(spec, rng);
  const size_t umq_cap = b.umq.size() + b.msgs.size(), prq_cap = b.prq.size() + b.recvs.size();
  gm::Envelope *umq, *prq, *msgs, *recvs;
  gm::Match* matches;
  int32_t* scratch;
  uint32_t* words;  // umq size, prq size, matches, status
  GPUCOMM_CUDA_CHECK(cudaMalloc(&umq, umq_cap * sizeof(gm::Envelope)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&prq, prq_cap * sizeof(gm::Envelope)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&msgs, (b.msgs.size() + 1) * sizeof(gm::Envelope)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&recvs, (b.recvs.size() + 1) * sizeof(gm::Envelope)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&matches, (b.msgs.size() + b.recvs.size() + 1) * sizeof(gm::Match)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&scratch, (std::max(b.msgs.size(), b.recvs.size()) + 1) * sizeof(int32_t)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&words, 4 * sizeof(uint32_t)));
  auto up = [](void* d, const std::vector<gm::Envelope>& h) {
    if (!h.empty())
      GPUCOMM_CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(gm::Envelope), cudaMemcpyHostToDevice));
  };
  up(umq, b.umq);
  up(prq, b.prq);
  up(msgs, b.msgs);
  up(recvs, b.recvs);
  const uint32_t init[4] = {static_cast<uint32_t>(b.umq.size()), static_cast<uint32_t>(b.prq.size()), 0, 0};
  GPUCOMM_CUDA_CHECK(cudaMemcpy(words, init, sizeof init, cudaMemcpyHostToDevice));
  gm::MatchJob job{umq,
                   words,
                   static_cast<uint32_t>(umq_cap),
                   prq,
                   words + 1,
                   static_cast<uint32_t>(prq_cap),
                   msgs,
                   static_cast<uint32_t>(b.msgs.size()),
                   recvs,
                   static_cast<uint32_t>(b.recvs.size()),
                   matches,
                   words + 2,
                   scratch,
                   words + 3,
                   {}};
  user_kernel<<<1, 256>>>(job);
  GPUCOMM_CUDA_CHECK_LAUNCH("user_kernel");
  GPUCOMM_CUDA_CHECK(cudaDeviceSynchronize());
  uint32_t fin[4];
  GPUCOMM_CUDA_CHECK(cudaMemcpy(fin, words, sizeof fin, cudaMemcpyDeviceToHost));
  gm::Outcome o;
  o.umq.resize(fin[0]);
  o.prq.resize(fin[1]);
  o.matches.resize(fin[2]);
  if (fin[0]) GPUCOMM_CUDA_CHECK(cudaMemcpy(o.umq.data(), umq, fin[0] * sizeof(gm::Envelope), cudaMemcpyDeviceToHost));
  if (fin[1]) GPUCOMM_CUDA_CHECK(cudaMemcpy(o.prq.data(), prq, fin[1] * sizeof(gm::Envelope), cudaMemcpyDeviceToHost));
  if (fin[2])
    GPUCOMM_CUDA_CHECK(cudaMemcpy(o.matches.data(), matches, fin[2] * sizeof(gm::Match), cudaMemcpyDeviceToHost));
  for (void* p : {static_cast<void*>(umq), static_cast<void*>(prq), static_cast<void*>(msgs), static_cast<void*>(recvs),
                  static_cast<void*>(matches), static_cast<void*>(scratch), static_cast<void*>(words)})
    GPUCOMM_CUDA_CHECK(cudaFree(p));
  EXPECT_EQ(fin[3], 0u) << gm::status_text(fin[3]);
  EXPECT_EQ(gm::describe_difference(gm::match_reference(b), o), "") << spec_text(spec) << "\n" << seed_note(seed);
}
