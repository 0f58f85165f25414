// The bootstrap store against foreign clients (loopback only): nothing buffered before a hello,
// a bounded number of connections waiting for one, a deadline for it, a back-off when the
// process runs out of descriptors, one log line for a flood of rejections; the job goes on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/job_failure.hpp"
#include "bootstrap/listen_registry.hpp"
#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"
#include "bootstrap/wire.hpp"
#include "gpucomm/bootstrap/unique_id.hpp"
#include "loopback.hpp"

namespace gpucomm::bootstrap {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A store for a job of `size` PEs on a loopback port, and the id its PEs join with.
struct TestStore {
  explicit TestStore(int size = 2)
      : id(UniqueId::create()),  // reserves the port; the store serves on that socket
        server(std::make_unique<StoreServer>(ListenRegistry::instance().take(id.endpoint()), size, id.token)) {}
  UniqueId id;
  std::unique_ptr<StoreServer> server;
};

// True when the peer closed `fd` within `ms` (whatever it sent first).
bool closed_within(int fd, int ms) {
  const auto end = std::chrono::steady_clock::now() + milliseconds(ms);
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t r = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN)) return true;
  }
  return false;
}

size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// Two real PEs join the store and complete a gather: the job is unaffected.
void run_job(const UniqueId& id) {
  JobFailure f0, f1;
  std::vector<std::string> r0, r1;
  std::thread t([&] {
    StoreClient c1(id, 1, 2, seconds(10), f1);
    r1 = c1.gather("g", 2, 1, "one", 10000, "test gather");
    c1.say_bye(5000);
  });
  StoreClient c0(id, 0, 2, seconds(10), f0);
  r0 = c0.gather("g", 2, 0, "zero", 10000, "test gather");
  t.join();
  c0.say_bye(5000);
  EXPECT_EQ(r0, (std::vector<std::string>{"zero", "one"}));
  EXPECT_EQ(r1, r0);
}

std::string hello_header(uint64_t payload_len) {
  wire::Header h{wire::kMagic, wire::kVersion, static_cast<uint16_t>(wire::Op::hello), 1, 2, 1, 0, 0, payload_len};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

TEST(StoreHostile, AnnouncedPayloadIsNotBufferedBeforeHello) {
  TestStore s;
  const size_t before = rss_bytes();
  std::vector<int> fds;
  const std::string junk(size_t(1) << 20, 'A');
  for (int i = 0; i < 8; ++i) {
    int fd = testing::loopback_connect(s.id.port);
    ASSERT_GE(fd, 0);
    std::string h = hello_header(uint64_t(1) << 30);  // "1 GiB follows"
    ASSERT_EQ(::send(fd, h.data(), h.size(), MSG_NOSIGNAL), static_cast<ssize_t>(h.size()));
    for (int k = 0; k < 8; ++k) ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    fds.push_back(fd);
  }
  for (int fd : fds) {
    EXPECT_TRUE(closed_within(fd, 2000)) << "the store kept a connection that announced 1 GiB";
    ::close(fd);
  }
  EXPECT_LT(rss_bytes(), before + (size_t(32) << 20)) << "the store buffered what foreign clients sent";
  run_job(s.id);
  s.server->shutdown(5000);
  EXPECT_GE(s.server->stats().rejected, 8u);
}

TEST(StoreHostile, IdleConnectionsAreBoundedAndTimedOut) {
  TestStore s;
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {
    int fd = testing::loopback_connect(s.id.port);
    ASSERT_GE(fd, 0) << "connection " << i;
    fds.push_back(fd);
  }
  // The job's PEs get in behind the flood (the store stops once they said goodbye, so the
  // foreign connections are checked before that).
  JobFailure f0, f1;
  StoreClient c0(s.id, 0, 2, seconds(10), f0);
  StoreClient c1(s.id, 1, 2, seconds(10), f1);
  std::this_thread::sleep_for(StoreServer::kHelloDeadline + milliseconds(500));
  int closed = 0;
  for (int fd : fds) {
    closed += closed_within(fd, 200);
    ::close(fd);
  }
  EXPECT_EQ(closed, 300) << "idle connections outlived the hello deadline";
  std::thread t([&] { c1.gather("g", 2, 1, "one", 10000, "test gather"); });
  auto parts = c0.gather("g", 2, 0, "zero", 10000, "test gather");
  t.join();
  EXPECT_EQ(parts, (std::vector<std::string>{"zero", "one"}));
  c0.say_bye(5000);
  c1.say_bye(5000);
  s.server->shutdown(5000);
  const auto& st = s.server->stats();
  EXPECT_GE(st.evicted, 300u - StoreServer::kMaxUnauthenticated);
  EXPECT_EQ(st.evicted + st.timed_out, 300u);
}

TEST(StoreHostile, HelloDribbledByteByByteTimesOut) {
  TestStore s;
  int fd = testing::loopback_connect(s.id.port);
  ASSERT_GE(fd, 0);
  const std::string h = hello_header(16);
  for (size_t i = 0; i < 12; ++i) {
    ::send(fd, h.data() + i, 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(milliseconds(50));
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_within(fd, 6000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, StoreServer::kHelloDeadline + seconds(1));
  ::close(fd);
  run_job(s.id);
  s.server->shutdown(5000);
  EXPECT_EQ(s.server->stats().timed_out, 1u);
}

TEST(StoreHostile, WrongHellosAreRejectedAndNeverServed) {
  TestStore s;
  struct Attempt {
    const char* what;
    std::string bytes;
  };
  std::string wrong_token = hello_header(16) + std::string(16, 'Z');
  wire::Header set{wire::kMagic, wire::kVersion, static_cast<uint16_t>(wire::Op::set), 1, 0, 1, 0, 0, 4};
  std::string early_set = std::string(reinterpret_cast<const char*>(&set), sizeof set) + "abcd";
  std::string right_token(reinterpret_cast<const char*>(s.id.token.data()), s.id.token.size());
  std::string bad_rank = hello_header(16) + right_token;
  bad_rank[8] = 7;  // rank 7 of a 2-PE job
  const std::vector<Attempt> attempts = {
      {"junk", "GET / HTTP/1.1\r\n\r\n" + std::string(64, '.')},
      {"wrong token", wrong_token},
      {"request before hello", early_set},
      {"rank outside the job", bad_rank},
      {"hello with a key", hello_header(16).replace(24, 4, "\x04\0\0\0", 4) + "keys"}};
  for (const auto& a : attempts) {
    int fd = testing::loopback_connect(s.id.port);
    ASSERT_GE(fd, 0);
    ::send(fd, a.bytes.data(), a.bytes.size(), MSG_NOSIGNAL);
    char buf[512];
    ssize_t got = 0, r;
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 2000) > 0 && (r = ::recv(fd, buf, sizeof buf, 0)) > 0) got += r;
    ASSERT_GE(got, static_cast<ssize_t>(sizeof(wire::Header))) << a.what;
    wire::Header h{};
    std::memcpy(&h, buf, sizeof h);
    EXPECT_EQ(h.op, static_cast<uint16_t>(wire::Op::error)) << a.what << ": the store did not refuse it";
    ::close(fd);
  }
  run_job(s.id);
  s.server->shutdown(5000);
  EXPECT_EQ(s.server->stats().rejected, attempts.size());
}

TEST(StoreHostile, FloodOfRejectionsLogsOneLine) {
  TestStore s;
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 100; ++i) {
    int fd = testing::loopback_connect(s.id.port);
    ASSERT_GE(fd, 0);
    const char junk[] = "\x01\x02\x03\x04 not a gpucomm frame .............................";
    ::send(fd, junk, sizeof junk, MSG_NOSIGNAL);
    EXPECT_TRUE(closed_within(fd, 2000));
    ::close(fd);
  }
  run_job(s.id);
  s.server->shutdown(5000);
  const std::string err = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = 0; (at = err.find("rejecting a connection", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << err;
  EXPECT_EQ(s.server->stats().rejected, 100u);
}

// In a child process whose descriptors run out: the store backs off, logs once, and still admits
// a PE that comes after a flood of idle connections.
TEST(StoreHostile, OutOfDescriptorsBacksOffAndLogsOnce) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the store's child process starts a thread after fork, which ThreadSanitizer does not support";
#elif defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizers' runtime needs descriptors of its own (UBSan's vptr check opens a pipe), which "
                  "this test exhausts";
#endif
  int ready_pipe[2], err_pipe[2], go_pipe[2];
  ASSERT_EQ(::pipe(ready_pipe), 0);
  ASSERT_EQ(::pipe(err_pipe), 0);
  ASSERT_EQ(::pipe(go_pipe), 0);
  UniqueId id = UniqueId::create();
  Fd listening = ListenRegistry::instance().take(id.endpoint());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(err_pipe[1], 2);
    rlimit rl{48, 48};
    ::setrlimit(RLIMIT_NOFILE, &rl);
    int rc = 1;
    {
      StoreServer server(std::move(listening), 1, id.token);
      [[maybe_unused]] ssize_t w = ::write(ready_pipe[1], "r", 1);
      char c;
      [[maybe_unused]] ssize_t r = ::read(go_pipe[0], &c, 1);  // the parent's PE finished
      server.shutdown(3000);
      rc = server.stats().fd_exhausted > 0 ? 0 : 3;
    }
    ::_exit(rc);
  }
  listening.reset();  // the child serves on it
  ::close(err_pipe[1]);
  char ready = 0;
  ASSERT_EQ(::read(ready_pipe[0], &ready, 1), 1);
  const uint16_t port = id.port;
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    int fd = testing::loopback_connect(port);
    if (fd >= 0) idle.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(300));
  // A PE of the job (size 1) joins behind the flood and finishes.
  JobFailure f;
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  try {
    StoreClient pe(id, 0, 1, seconds(20), f);
    pe.gather("g", 1, 0, "x", 10000, "test gather");
    pe.say_bye(5000);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int fd : idle) ::close(fd);
  [[maybe_unused]] ssize_t w = ::write(go_pipe[1], "g", 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::string err;
  char buf[4096];
  for (ssize_t r; (r = ::read(err_pipe[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(r));
  for (int fd : {ready_pipe[0], ready_pipe[1], err_pipe[0], go_pipe[0], go_pipe[1]}) ::close(fd);
  EXPECT_EQ(error, "") << "a PE behind the flood was not admitted";
  EXPECT_LT(took, 10.0) << "admitting the PE took " << took << " s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the store never ran out of descriptors: " << err;
  size_t lines = 0;
  for (size_t at = 0; (at = err.find("accept failed", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << err;
}

}  // namespace
}  // namespace gpucomm::bootstrap
