// The shared reference traces: gpucomm's numbers must equal the ground truth in each trace's
// README.md (computed independently from dumpi2ascii output). The READMEs are parsed here, so
// the expected values are the READMEs' own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "gpucomm/trace/analysis.hpp"

namespace gpucomm::trace {
namespace {
namespace fs = std::filesystem;

// GPUCOMM_TRACES_DIR, else the first shared/traces folder beside the repository or above it.
fs::path traces_dir() {
  if (const char* e = std::getenv("GPUCOMM_TRACES_DIR")) return e;
  for (fs::path p = fs::absolute(GPUCOMM_SOURCE_DIR); p.has_relative_path(); p = p.parent_path())
    if (fs::is_directory(p.parent_path() / "shared" / "traces")) return p.parent_path() / "shared" / "traces";
  return {};
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(15);
  os << v;
  return os.str();
}

std::string set_text(const std::set<int32_t>& s) {
  std::string out = "[";
  for (auto it = s.begin(); it != s.end(); ++it) out += (it == s.begin() ? "" : ", ") + std::to_string(*it);
  return out + "]";
}

std::string counts_text(const std::map<std::string, uint64_t>& m) {
  std::string out;
  for (auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k + ":" + std::to_string(v);
  return out;
}

class SharedTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedTrace, MatchesReadme) {
  fs::path dir = traces_dir();
  if (dir.empty() || !fs::is_directory(dir / GetParam()))
    GTEST_SKIP() << "shared trace " << GetParam() << " not found (set GPUCOMM_TRACES_DIR)";
  std::ifstream is(dir / GetParam() / "README.md");
  ASSERT_TRUE(is) << "README.md missing in " << (dir / GetParam());
  std::string readme((std::istreambuf_iterator<char>(is)), {});
  Analysis a = analyze(TraceSet::open((dir / GetParam()).string()));

  RankMetrics all;
  uint64_t pairs = 0;
  bool pair_counts_ok = true, pair_bytes_ok = true;
  for (auto& m : a.ranks) {
    all.sends += m.sends;
    all.recvs += m.recvs;
    all.send_bytes.merge(m.send_bytes);
    all.any_source_recvs += m.any_source_recvs;
    all.any_source_unresolved += m.any_source_unresolved;
    for (auto& [k, v] : m.collectives) all.collectives[k] += v;
  }
  for (auto& row : a.pairs) {
    for (auto& p : row) {
      pairs += p.sends > 0;
      pair_counts_ok &= p.sends == p.recvs;
      pair_bytes_ok &= p.send_bytes == p.recv_bytes;
    }
  }
  Summary sb = all.send_bytes.summary();

  std::smatch m;
  static const std::regex whole(
      R"(Whole trace: (\d+) ranks, (\d+) p2p sends, (\d+) p2p recvs, send bytes min/median/max/total = ([\d.]+) / ([\d.]+) / ([\d.]+) / (\d+), (\d+) communicating \(src,dst\) pairs, pair count check: (\w+), pair bytes check: (\w+).*MPI_ANY_SOURCE recvs: (\d+) \(unresolved (\d+)\))");
  ASSERT_TRUE(std::regex_search(readme, m, whole)) << "no whole-trace line in README";
  EXPECT_EQ(std::to_string(a.ranks.size()), m[1].str());
  EXPECT_EQ(std::to_string(all.sends), m[2].str());
  EXPECT_EQ(std::to_string(all.recvs), m[3].str());
  EXPECT_EQ(fmt(sb.min), m[4].str());
  EXPECT_EQ(fmt(sb.median), m[5].str());
  EXPECT_EQ(fmt(sb.max), m[6].str());
  EXPECT_EQ(fmt(sb.total), m[7].str());
  EXPECT_EQ(std::to_string(pairs), m[8].str());
  EXPECT_EQ(pair_counts_ok ? "ok" : "mismatch", m[9].str());
  EXPECT_EQ(pair_bytes_ok ? "ok" : "mismatch", m[10].str());
  EXPECT_EQ(std::to_string(all.any_source_recvs), m[11].str());
  EXPECT_EQ(std::to_string(all.any_source_unresolved), m[12].str());

  static const std::regex coll(R"(Collectives \(all ranks\): ([^\n]*))");
  ASSERT_TRUE(std::regex_search(readme, m, coll));
  EXPECT_EQ(counts_text(all.collectives), m[1].str());

  static const std::regex row(
      R"(\| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) / ([\d.]+) / ([\d.]+) \| ([\d.]+) / ([\d.]+) / ([\d.]+) \| ([^|]*) \| (\d+) \|)");
  size_t rows = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), row); it != std::sregex_iterator(); ++it, ++rows) {
    const std::smatch& r = *it;
    int rank = std::stoi(r[1]);
    ASSERT_LT(rank, static_cast<int>(a.ranks.size()));
    const RankMetrics& k = a.ranks[rank];
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(std::to_string(k.sends), r[2].str());
    EXPECT_EQ(std::to_string(k.recvs), r[3].str());
    EXPECT_EQ(std::to_string(k.distinct_peers()), r[4].str());
    Summary s = k.send_bytes.summary(), q = k.recv_bytes.summary();
    EXPECT_EQ(fmt(s.min) + "/" + fmt(s.median) + "/" + fmt(s.max), r[5].str() + "/" + r[6].str() + "/" + r[7].str());
    EXPECT_EQ(fmt(q.min) + "/" + fmt(q.median) + "/" + fmt(q.max), r[8].str() + "/" + r[9].str() + "/" + r[10].str());
    EXPECT_EQ(counts_text(k.collectives), r[11].str());
    EXPECT_EQ(std::to_string(k.max_outstanding_recv_requests), r[12].str());
  }
  EXPECT_EQ(rows, a.ranks.size());

  static const std::regex detail(
      R"(- rank (\d+): sends ([^;]*); recvs ([^;]*); send peers (\[[^\]]*\]); recv peers (\[[^\]]*\]); tags (\[[^\]]*\]))");
  size_t details = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), detail); it != std::sregex_iterator();
       ++it, ++details) {
    const std::smatch& r = *it;
    const RankMetrics& k = a.ranks[std::stoi(r[1])];
    SCOPED_TRACE("rank " + r[1].str());
    EXPECT_EQ(counts_text(k.send_functions), r[2].str());
    EXPECT_EQ(counts_text(k.recv_functions), r[3].str());
    EXPECT_EQ(set_text(k.send_peers), r[4].str());
    EXPECT_EQ(set_text(k.recv_peers), r[5].str());
    EXPECT_EQ(set_text(k.tags), r[6].str());
  }
  EXPECT_EQ(details, a.ranks.size());
  EXPECT_TRUE(a.warnings.empty()) << a.warnings.front();
}

INSTANTIATE_TEST_SUITE_P(Traces, SharedTrace, ::testing::Values("lulesh-n8", "minife-n4", "naive-alltoall-n4"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace gpucomm::trace
