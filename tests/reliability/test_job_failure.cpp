// Failure semantics of the bootstrap with PEs as threads of one process: an abort reaches every
// PE at once and names the PE, finalize never waits once the job failed, a PE whose own wait
// failed aborts instead of finalizing, late joiners learn of the failure, the job-state word is
// set from the thread that learns of the failure.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Joins `n` PEs of job `id` on threads; returns them in rank order.
std::vector<std::unique_ptr<Bootstrap>> join(const UniqueId& id, int n) {
  std::vector<std::unique_ptr<Bootstrap>> pes(static_cast<size_t>(n));
  std::vector<std::thread> ts;
  ts.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] { pes[static_cast<size_t>(r)] = std::make_unique<Bootstrap>(id, r, n); });
  for (auto& t : ts) t.join();
  return pes;
}

class JobFailure : public ::testing::Test {
 protected:
  void SetUp() override { setenv("GPUCOMM_TIMEOUT", "20", 1); }
  void TearDown() override { unsetenv("GPUCOMM_TIMEOUT"); }
};

TEST_F(JobFailure, AbortReachesEveryPeAtOnceAndFinalizeWaitsForNobody) {
  auto pes = join(UniqueId::create(), 4);
  std::vector<std::string> errors(4);
  std::vector<double> took(4);
  std::vector<std::thread> ts;
  const auto start = Clock::now();
  for (int r : {0, 1, 3}) {
    ts.emplace_back([&, r] {
      try {
        pes[static_cast<size_t>(r)]->barrier();
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
        EXPECT_EQ(e.code(), Errc::peer_failure) << e.what();
      }
      took[static_cast<size_t>(r)] = since(start);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pes[2]->abort("injected by the test");
  for (auto& t : ts) t.join();
  for (int r : {0, 1, 3}) {
    EXPECT_NE(errors[static_cast<size_t>(r)].find("rank 2 aborted: injected by the test"), std::string::npos)
        << "rank " << r << ": " << errors[static_cast<size_t>(r)];
    EXPECT_LT(took[static_cast<size_t>(r)], 1.1) << "rank " << r;
    EXPECT_EQ(pes[static_cast<size_t>(r)]->failed_rank(), 2);
  }
  const auto fin = Clock::now();
  for (int r : {3, 2, 1, 0}) pes[static_cast<size_t>(r)]->finalize();
  EXPECT_LT(since(fin), 1.0) << "finalize waited although the job had failed";
}

TEST_F(JobFailure, AbortThenExitIsReportedAsTheAbort) {
  auto pes = join(UniqueId::create(), 3);
  pes[1]->abort("bad input on rank 1");
  pes[1].reset();  // the PE exits right after its abort notice
  const auto start = Clock::now();
  while ((!pes[0]->failed() || !pes[2]->failed()) && since(start) < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_NE(pes[0]->failure().find("rank 1 aborted: bad input on rank 1"), std::string::npos) << pes[0]->failure();
  EXPECT_NE(pes[2]->failure().find("rank 1 aborted"), std::string::npos) << pes[2]->failure();
}

TEST_F(JobFailure, LocalTimeoutMakesFinalizeAbort) {
  setenv("GPUCOMM_TIMEOUT", "0.3", 1);
  auto pes = join(UniqueId::create(), 2);
  try {
    pes[1]->gather("only-rank-1", 2, 1, "x");  // rank 0 never joins this gather
    ADD_FAILURE() << "the gather completed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
  }
  EXPECT_NE(pes[1]->local_failure().find("timed out"), std::string::npos) << pes[1]->local_failure();
  const auto start = Clock::now();
  pes[1]->finalize();  // out of step: aborts instead of joining a barrier nobody else joins
  EXPECT_LT(since(start), 1.0);
  while (!pes[0]->failed() && since(start) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_NE(pes[0]->failure().find("rank 1 aborted"), std::string::npos) << pes[0]->failure();
  pes[0]->finalize();
  EXPECT_LT(since(start), 2.0);
}

TEST_F(JobFailure, LateJoinerLearnsOfTheFailure) {
  UniqueId id = UniqueId::create();
  std::unique_ptr<Bootstrap> r0, r1;
  std::thread t0([&] { r0 = std::make_unique<Bootstrap>(id, 0, 3); });
  std::thread t1([&] { r1 = std::make_unique<Bootstrap>(id, 1, 3); });
  t0.join();
  t1.join();
  r1->abort("early failure");
  auto late = std::make_unique<Bootstrap>(id, 2, 3);
  const auto start = Clock::now();
  while (!late->failed() && since(start) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(late->failed());
  EXPECT_EQ(late->failed_rank(), 1);
  EXPECT_THROW(late->barrier(), Error);
}

TEST_F(JobFailure, JobStateWordIsSetByTheThreadThatLearnsOfTheFailure) {
  auto pes = join(UniqueId::create(), 3);
  uint32_t word0 = 0, word2 = 0;
  pes[0]->set_job_state_word(&word0);
  pes[2]->set_job_state_word(&word2);
  pes[1]->abort("for the word");
  const auto start = Clock::now();
  auto load = [](uint32_t* w) { return std::atomic_ref<uint32_t>(*w).load(std::memory_order_relaxed); };
  while ((load(&word0) == 0 || load(&word2) == 0) && since(start) < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(load(&word0), 2u);  // rank 1 + 1
  EXPECT_EQ(load(&word2), 2u);
  uint32_t late_word = 0;
  pes[0]->set_job_state_word(&late_word);  // registered after the failure: set at once
  EXPECT_EQ(load(&late_word), 2u);
  pes[0]->set_job_state_word(nullptr);
  pes[2]->set_job_state_word(nullptr);
}

}  // namespace
}  // namespace gpucomm::bootstrap
