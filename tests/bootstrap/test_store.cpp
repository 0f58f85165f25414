// The bootstrap store with several PEs as threads of one process.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"
#include "loopback.hpp"

namespace gpucomm::bootstrap {
namespace {

// Runs fn(rank) on `n` threads, each with its own Bootstrap on `id`; rethrows the first failure.
template <class Fn>
void run_ranks(const UniqueId& id, int n, Fn fn) {
  std::vector<std::thread> ts;
  std::vector<std::string> errors(static_cast<size_t>(n));
  ts.reserve(n);
  for (int r = 0; r < n; ++r) {
    ts.emplace_back([&, r] {
      try {
        Bootstrap b(id, r, n);
        fn(b);
        b.finalize();
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ts) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

}  // namespace

TEST(Store, AllgatherBarrierAndKeyValue) {
  UniqueId id = UniqueId::create();
  run_ranks(id, 8, [](Bootstrap& b) {
    for (int round = 0; round < 20; ++round) {
      auto all = b.allgather(std::string(static_cast<size_t>(b.rank() + round), 'x'));
      ASSERT_EQ(all.size(), 8u);
      for (int r = 0; r < 8; ++r) ASSERT_EQ(all[static_cast<size_t>(r)].size(), static_cast<size_t>(r + round));
      b.barrier();
    }
    b.set("k" + std::to_string(b.rank()), "v" + std::to_string(b.rank()));
    int peer = (b.rank() + 3) % 8;
    EXPECT_EQ(b.get("k" + std::to_string(peer)), "v" + std::to_string(peer));
    // Sub-group gathers run concurrently under distinct names.
    auto part = b.gather("parity" + std::to_string(b.rank() % 2), 4, b.rank() / 2, std::to_string(b.rank()));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(part[static_cast<size_t>(i)], std::to_string(i * 2 + b.rank() % 2));
  });
}

TEST(Store, WrongTokenIsRejected) {
  UniqueId id = UniqueId::create();
  Bootstrap rank0(id, 0, 2);
  UniqueId forged = id;
  forged.token[0] ^= 0xff;
  try {
    Bootstrap intruder(forged, 1, 2);
    FAIL() << "a wrong token was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol);
    EXPECT_NE(std::string(e.what()).find("wrong token"), std::string::npos) << e.what();
  }
  // The store still serves the real rank 1.
  std::thread t([&] {
    Bootstrap rank1(id, 1, 2);
    rank1.barrier();
    rank1.finalize();
  });
  rank0.barrier();
  rank0.finalize();
  t.join();
}

TEST(Store, ForeignAndMalformedMessagesAreRejected) {
  UniqueId id = UniqueId::create();
  Bootstrap rank0(id, 0, 2);
  int fd = testing::loopback_connect(id.port);
  ASSERT_GE(fd, 0);
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n........................................";
  ASSERT_GT(::send(fd, junk, sizeof junk, 0), 0);
  char buf[256];
  // The store answers with an error frame and closes.
  ssize_t got = 0, r;
  while ((r = ::recv(fd, buf, sizeof buf, 0)) > 0) got += r;
  EXPECT_GT(got, 0);
  ::close(fd);
  std::thread t([&] {
    Bootstrap rank1(id, 1, 2);
    rank1.barrier();
    rank1.finalize();
  });
  rank0.barrier();
  rank0.finalize();
  t.join();
}

TEST(Store, WrongRankOrSizeIsRejected) {
  UniqueId id = UniqueId::create();
  Bootstrap rank0(id, 0, 2);
  EXPECT_THROW(Bootstrap(id, 1, 3), Error);  // disagrees on the size
  EXPECT_THROW(Bootstrap(id, 2, 2), Error);  // rank outside the job
  try {
    Bootstrap dup(id, 0, 2);  // a second rank 0 (its store cannot bind the same port either)
    FAIL();
  } catch (const Error& e) {
    SUCCEED() << e.what();
  }
  std::thread t([&] {
    Bootstrap rank1(id, 1, 2);
    rank1.finalize();
  });
  rank0.finalize();
  t.join();
}

TEST(Store, BusyPortIsReported) {
  UniqueId id = UniqueId::create();
  Bootstrap holder(id, 0, 1);  // owns the port
  UniqueId same = UniqueId::parse(id.to_string());
  same.token[1] ^= 1;
  try {
    Bootstrap second(same, 0, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("busy"), std::string::npos) << e.what();
  }
  holder.finalize();
}

TEST(Store, UnreachableStoreTimesOutNamingTheAddress) {
  UniqueId id = UniqueId::create();
  uint16_t port = id.port;
  {
    Bootstrap b(id, 0, 1);
    b.finalize();
  }  // frees the port: nobody listens there now
  setenv("GPUCOMM_BOOTSTRAP_TIMEOUT", "0.5", 1);
  auto start = std::chrono::steady_clock::now();
  try {
    Bootstrap b(id, 1, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
  }
  unsetenv("GPUCOMM_BOOTSTRAP_TIMEOUT");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Store, GatherTimeoutSaysWhoIsMissing) {
  setenv("GPUCOMM_TIMEOUT", "0.5", 1);
  {
    UniqueId id = UniqueId::create();
    Bootstrap rank0(id, 0, 3);
    Bootstrap rank1(id, 1, 3);  // rank 2 never comes
    std::string rank1_error;
    std::thread t([&] {
      try {
        rank1.barrier();
      } catch (const Error& e) {
        rank1_error = e.what();  // rank 1 cannot finish the barrier either; rank 0's message is checked
      }
    });
    try {
      rank0.barrier();
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::timeout);
      EXPECT_NE(std::string(e.what()).find("missing member index(es): 2"), std::string::npos) << e.what();
    }
    t.join();
    EXPECT_FALSE(rank1_error.empty()) << "rank 1's barrier completed without rank 2";
  }  // finalizing a job whose rank 2 never came also ends within the timeout
  unsetenv("GPUCOMM_TIMEOUT");
}

}  // namespace gpucomm::bootstrap
