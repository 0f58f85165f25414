// The DUMPI binary and dumpi2ascii text readers: round trips, clear errors on bad input, fuzzing.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>

#include "gpucomm/core/error.hpp"
#include "gpucomm/trace/analysis.hpp"
#include "gpucomm/trace/ascii_reader.hpp"
#include "gpucomm/trace/dumpi_reader.hpp"
#include "scenarios.hpp"
#include "test_support.hpp"

namespace gpucomm::trace {
namespace {
using namespace testing;
namespace fs = std::filesystem;

std::vector<char> slurp(const std::string& p) {
  std::ifstream is(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(is), {});
}
void spit(const std::string& p, const std::vector<char>& d) {
  std::ofstream os(p, std::ios::binary | std::ios::trunc);
  os.write(d.data(), static_cast<std::streamsize>(d.size()));
}
// Reads every record of a file; returns the count.
uint64_t read_all(RecordSource& s) {
  Record r;
  uint64_t n = 0;
  while (s.next(r)) ++n;
  return n;
}

TEST(DumpiReader, RoundTripsRecordsHeaderFooterAndSizes) {
  TempDir dir("rt");
  write_scenario_a(dir.path);
  DumpiFile f(rank_path(dir.path, "a", 0), 0);
  EXPECT_EQ(f.header().version, (std::array<uint8_t, 3>{13, 0, 0}));
  EXPECT_EQ(f.header().start_time, 1700000000u);
  EXPECT_EQ(f.header().hostname, "testhost");
  EXPECT_EQ(f.datatype_sizes().size(), 28u);
  Record r;
  ASSERT_TRUE(f.next(r));
  EXPECT_EQ(r.func, fid::Init);
  EXPECT_EQ(r.wall_start_ns, us(0));
  EXPECT_EQ(r.wall_stop_ns, us(10));
  ASSERT_TRUE(f.next(r));
  EXPECT_EQ(r.func, fid::Comm_size);
  EXPECT_EQ(r.value, 2);
  ASSERT_TRUE(f.next(r));
  EXPECT_EQ(r.func, fid::Isend);
  EXPECT_EQ(r.count, 4);
  EXPECT_EQ(r.datatype, kInt);
  EXPECT_EQ(r.peer, 1);
  EXPECT_EQ(r.tag, 5);
  EXPECT_EQ(r.comm, kCommWorld);
  EXPECT_EQ(r.request, 10);
  uint64_t rest = read_all(f);
  EXPECT_EQ(rest, 5u);
  EXPECT_EQ(f.footer_counts()[fid::Isend], 2u);
  EXPECT_EQ(f.footer_counts()[fid::kAllFunctions], 8u);
  EXPECT_FALSE(f.next(r));  // stays at the end
}

TEST(DumpiReader, WrongMagicNamesFileAndOffset) {
  TempDir dir("magic");
  write_scenario_a(dir.path);
  std::string p = rank_path(dir.path, "a", 0);
  auto d = slurp(p);
  d[1] = 0;
  spit(p, d);
  try {
    DumpiFile f(p, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol);
    std::string w = e.what();
    EXPECT_NE(w.find(p), std::string::npos) << w;
    EXPECT_NE(w.find("byte offset 0"), std::string::npos) << w;
    EXPECT_NE(w.find("magic"), std::string::npos) << w;
  }
}

TEST(DumpiReader, EveryTruncationIsAClearError) {
  TempDir dir("trunc");
  write_scenario_a(dir.path);
  std::string p = rank_path(dir.path, "a", 1);
  const auto full = slurp(p);
  std::string q = (dir.path / "cut.bin").string();
  // Every length in the first 512 and last 256 bytes (magic, body start, footer, tables, index)
  // and every 7th in between.
  for (size_t len = 0; len < full.size(); len += (len < 512 || len + 256 >= full.size()) ? 1 : 7) {
    spit(q, std::vector<char>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len)));
    try {
      DumpiFile f(q, 0);
      read_all(f);
      ADD_FAILURE() << "truncated to " << len << " bytes of " << full.size() << " read without error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::protocol) << e.what();
      EXPECT_NE(std::string(e.what()).find("byte offset"), std::string::npos) << e.what();
    }
  }
}

TEST(DumpiReader, UnknownFunctionIdIsReportedWithItsOffset) {
  TempDir dir("unknown");
  std::string p = rank_path(dir.path, "x", 0);
  {
    DumpiWriter w(p);
    w.init(us(0), us(1));
    w.isend(us(2), us(3), 1, kInt, 1, 1, 5);
    w.close();
  }
  uint64_t label_at = 0;
  {
    DumpiFile probe(p, 0);
    Record r;
    probe.next(r);
    probe.next(r);
    label_at = probe.bytes_consumed();  // where the end-of-stream label starts
  }
  auto d = slurp(p);
  d[label_at] = static_cast<char>(0x7f);  // label 0x7f25: no such function
  spit(p, d);
  try {
    DumpiFile f(p, 0);
    read_all(f);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("byte offset " + std::to_string(label_at)), std::string::npos) << w;
    EXPECT_NE(w.find("unknown function id 32549"), std::string::npos) << w;
  }
}

TEST(DumpiReader, FuzzedFilesNeverCrash) {
  TempDir dir("fuzz");
  write_scenario_a(dir.path);
  const std::string p = rank_path(dir.path, "a", 1);
  const auto clean = slurp(p);
  const uint64_t seed = gpucomm::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::string q = (dir.path / "fuzz.bin").string();
  int errors = 0, clean_reads = 0;
  for (int iter = 0; iter < 400; ++iter) {
    auto d = clean;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) d[rng() % d.size()] = static_cast<char>(rng());
    if (iter % 5 == 0) d.resize(rng() % d.size());
    spit(q, d);
    try {
      DumpiFile f(q, 0);
      read_all(f);
      ++clean_reads;
    } catch (const Error& e) {
      ++errors;
      ASSERT_EQ(e.code(), Errc::protocol) << e.what() << " " << gpucomm::testing::seed_note(seed);
    }
  }
  EXPECT_GT(errors, 0) << gpucomm::testing::seed_note(seed);
  RecordProperty("clean_reads", clean_reads);
}

TEST(AsciiReader, FuzzedTextNeverCrashes) {
  TempDir dir("afuzz");
  write_scenario_a(dir.path);  // for the meta-less text directory below only the .txt matters
  const uint64_t seed = gpucomm::testing::test_seed();
  std::mt19937_64 rng(seed);
  const std::string clean =
      "MPI_Waitall entering at walltime 1000.000152000, cputime 0.000000000 seconds in thread 0.\n"
      "int count=2\nMPI_Request requests[2]=[20, 21]\n"
      "MPI_Status statuses[2]=[{bytes=16, cancelled=0, source=0, tag=6, error=0}, {bytes=16, cancelled=0, source=0, "
      "tag=5, error=0}]\n"
      "MPI_Waitall returning at walltime 1000.000160000, cputime 0.000000000 seconds in thread 0.\n"
      "MPI_Irecv entering at walltime 1000.000170000, cputime 0.000000000 seconds in thread 0.\n"
      "int count=4\nMPI_Datatype datatype=9 (MPI_INT)\nint source=-1 (MPI_ANY_SOURCE)\nint tag=5\n"
      "MPI_Comm comm=2 (MPI_COMM_WORLD)\nMPI_Request request=[21]\n"
      "MPI_Irecv returning at walltime 1000.000171000, cputime 0.000000000 seconds in thread 0.\n";
  const std::string p = (dir.path / "f-0000.txt").string();
  int errors = 0;
  for (int iter = 0; iter < 300; ++iter) {
    std::string d = clean;
    int edits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < edits; ++k) {
      size_t at = rng() % d.size();
      switch (rng() % 3) {
        case 0:
          d[at] = static_cast<char>(rng());
          break;
        case 1:
          d.erase(at, 1 + rng() % 20);
          break;
        default:
          d.insert(at, 1, "=[{,}] -0123456789\n"[rng() % 20]);
          break;
      }
      if (d.empty()) d = "x";
    }
    std::ofstream(p, std::ios::trunc) << d;
    try {
      AsciiFile f(p, 0);
      read_all(f);
    } catch (const Error& e) {
      ++errors;
      ASSERT_EQ(e.code(), Errc::protocol) << e.what() << " " << gpucomm::testing::seed_note(seed);
      ASSERT_NE(std::string(e.what()).find("line "), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 0) << gpucomm::testing::seed_note(seed);
}

TEST(TraceSet, MissingRankFileIsNamed) {
  TempDir dir("missing");
  write_scenario_a(dir.path);
  fs::remove(rank_path(dir.path, "a", 1));
  try {
    TraceSet::open(dir.path.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("a-0001.bin"), std::string::npos) << e.what();
  }
}

TEST(TraceSet, RankFromAnotherRunIsRejected) {
  TempDir dir("mixed");
  write_scenario_a(dir.path);
  {
    DumpiWriter w(rank_path(dir.path, "a", 1), 1700000999);  // another run's start time
    w.init(us(0), us(1));
    w.close();
  }
  TraceSet ts = TraceSet::open(dir.path.string());
  EXPECT_NO_THROW(ts.open_rank(0));
  try {
    ts.open_rank(1);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("a-0001.bin"), std::string::npos) << w;
    EXPECT_NE(w.find("another run"), std::string::npos) << w;
    EXPECT_NE(w.find("byte offset"), std::string::npos) << w;
  }
}

TEST(TraceSet, BadPathsAreExplained) {
  EXPECT_THROW(TraceSet::open("/nonexistent/trace/dir"), Error);
  TempDir dir("empty");
  try {
    TraceSet::open(dir.path.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("neither a DUMPI .meta"), std::string::npos) << e.what();
  }
}

// dumpi2ascii text for scenario A (the tool's layout: entering line, one line per argument,
// returning line).
void write_ascii_scenario_a(const fs::path& dir) {
  auto stamp = [](int64_t t) {
    char b[64];
    std::snprintf(b, sizeof b, "%lld.%09lld", static_cast<long long>(t / 1000000000),
                  static_cast<long long>(t % 1000000000));
    return std::string(b);
  };
  auto call = [&](std::ostream& os, const std::string& fn, int64_t t0, int64_t t1, const std::string& args) {
    os << fn << " entering at walltime " << stamp(t0) << ", cputime 0.000000000 seconds in thread 0.\n"
       << args << fn << " returning at walltime " << stamp(t1) << ", cputime 0.000000000 seconds in thread 0.\n";
  };
  std::ofstream r0(dir / "a-0000.txt"), r1(dir / "a-0001.txt");
  call(r0, "MPI_Init", us(0), us(10), "int argc=1\nstring argv[1]=[\"prog\"]\n");
  call(r0, "MPI_Comm_size", us(20), us(21), "MPI_Comm comm=2 (MPI_COMM_WORLD)\nint size=2\n");
  call(r0, "MPI_Isend", us(100), us(101),
       "int count=4\nMPI_Datatype datatype=9 (MPI_INT)\nint dest=1\nint tag=5\nMPI_Comm comm=2 "
       "(MPI_COMM_WORLD)\nMPI_Request request=[10]\n");
  call(r0, "MPI_Isend", us(102), us(103),
       "int count=2\nMPI_Datatype datatype=14 (MPI_DOUBLE)\nint dest=1\nint tag=6\nMPI_Comm comm=2 "
       "(MPI_COMM_WORLD)\nMPI_Request request=[10]\n");
  call(r0, "MPI_Send", us(104), us(105),
       "int count=8\nMPI_Datatype datatype=9 (MPI_INT)\nint dest=-2 (MPI_ROOT)\nint tag=7\nMPI_Comm comm=2 "
       "(MPI_COMM_WORLD)\n");
  call(r0, "MPI_Waitall", us(106), us(110),
       "int count=2\nMPI_Request requests[2]=[10, 10]\nMPI_Status statuses[2]=<IGNORED>\n");
  call(r0, "MPI_Allreduce", us(120), us(130),
       "int count=3\nMPI_Datatype datatype=14 (MPI_DOUBLE)\nMPI_Op op=3 (MPI_SUM)\nMPI_Comm comm=2 (MPI_COMM_WORLD)\n");
  call(r0, "MPI_Finalize", us(200), us(210), "");
  call(r1, "MPI_Init", us(0), us(10), "int argc=1\nstring argv[1]=[\"prog\"]\n");
  call(r1, "MPI_Irecv", us(50), us(51),
       "int count=2\nMPI_Datatype datatype=14 (MPI_DOUBLE)\nint source=0\nint tag=6\nMPI_Comm comm=2 "
       "(MPI_COMM_WORLD)\nMPI_Request request=[20]\n");
  call(r1, "MPI_Irecv", us(150), us(151),
       "int count=4\nMPI_Datatype datatype=9 (MPI_INT)\nint source=-1 (MPI_ANY_SOURCE)\nint tag=5\nMPI_Comm comm=2 "
       "(MPI_COMM_WORLD)\nMPI_Request request=[21]\n");
  call(r1, "MPI_Waitall", us(152), us(160),
       "int count=2\nMPI_Request requests[2]=[20, 21]\nMPI_Status statuses[2]=[{bytes=16, cancelled=0, source=0, "
       "tag=6, error=0}, "
       "{bytes=16, cancelled=0, source=0, tag=5, error=0}]\n");
  call(r1, "MPI_Allreduce", us(165), us(170),
       "int count=3\nMPI_Datatype datatype=14 (MPI_DOUBLE)\nMPI_Op op=3 (MPI_SUM)\nMPI_Comm comm=2 (MPI_COMM_WORLD)\n");
  call(r1, "MPI_Finalize", us(200), us(210), "");
}

TEST(AsciiReader, AgreesWithTheBinaryReader) {
  TempDir bin("bin"), txt("txt");
  write_scenario_a(bin.path);
  write_ascii_scenario_a(txt.path);
  Analysis a = analyze(TraceSet::open(bin.path.string()));
  Analysis b = analyze(TraceSet::open(txt.path.string()));
  ASSERT_EQ(b.ranks.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const RankMetrics &x = a.ranks[r], &y = b.ranks[r];
    EXPECT_EQ(x.calls, y.calls);
    EXPECT_EQ(x.sends, y.sends);
    EXPECT_EQ(x.recvs, y.recvs);
    EXPECT_EQ(x.send_elements.values(), y.send_elements.values());
    EXPECT_EQ(x.recv_peers, y.recv_peers);
    EXPECT_EQ(x.any_source_unresolved, y.any_source_unresolved);
    EXPECT_EQ(x.proc_null_sends, y.proc_null_sends);
    EXPECT_EQ(x.max_outstanding_recv_requests, y.max_outstanding_recv_requests);
    EXPECT_EQ(x.t_mpi_ns, y.t_mpi_ns);
    EXPECT_EQ(x.collectives, y.collectives);
    EXPECT_EQ(a.queues[r].umq_depth.values(), b.queues[r].umq_depth.values());
    EXPECT_EQ(a.queues[r].prq_depth.values(), b.queues[r].prq_depth.values());
    // The text has no datatype-size table: sizes are unknown there, elements are not.
    EXPECT_EQ(y.send_bytes.count(), 0u);
    EXPECT_EQ(y.send_size_unknown, x.sends);
  }
}

TEST(AsciiReader, UnclosedRecordNamesTheLine) {
  TempDir dir("bad");
  {
    std::ofstream os(dir.path / "t-0000.txt");
    os << "MPI_Barrier entering at walltime 1.000000000, cputime 0.000000000 seconds in thread 0.\n"
          "MPI_Comm comm=2 (MPI_COMM_WORLD)\n";
  }
  AsciiFile f((dir.path / "t-0000.txt").string(), 0);
  Record r;
  try {
    f.next(r);
    FAIL();
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("line 2"), std::string::npos) << w;
    EXPECT_NE(w.find("MPI_Barrier"), std::string::npos) << w;
  }
}

TEST(DumpiReader, ThroughputOnOneCore) {
  // A large synthetic rank file (about 24 MB of Isend/Irecv/Waitall records).
  TempDir dir("speed");
  const std::string p = rank_path(dir.path, "s", 0);
  {
    DumpiWriter w(p);
    w.init(us(0), us(1));
    int64_t t = us(10);
    for (int i = 0; i < 200000; ++i, t += 3000) {
      w.irecv(t, t + 100, 16, kDouble, 1, i & 7, 100 + (i & 7));
      w.isend(t + 200, t + 300, 16, kDouble, 1, i & 7, 200);
      if ((i & 7) == 7) {
        std::vector<int32_t> reqs;
        std::vector<Status> st;
        for (int k = 0; k < 8; ++k) {
          reqs.push_back(100 + k);
          st.push_back({128, 1, k, 0, 0});
        }
        w.waitall(t + 400, t + 500, reqs, st);
      }
    }
    w.close();
  }
  const auto bytes = fs::file_size(p);
  const auto t0 = std::chrono::steady_clock::now();
  DumpiFile f(p, 0);
  uint64_t n = read_all(f);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double mbs = double(bytes) / 1e6 / s;
  RecordProperty("mb_per_s", std::to_string(mbs));
  std::printf("read %llu records, %.1f MB in %.3f s: %.1f MB/s\n", static_cast<unsigned long long>(n),
              double(bytes) / 1e6, s, mbs);
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_GT(mbs, 50.0);
#endif
}

}  // namespace
}  // namespace gpucomm::trace
