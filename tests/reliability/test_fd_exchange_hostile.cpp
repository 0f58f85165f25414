// The fd exchange against foreign clients: another user cannot reach the socket (a 0700
// directory), a process of the job's user that is not the expected PE, or that lacks the
// exchange's secret, gets nothing and is never counted as served; every receive has a deadline;
// the client checks that the server is the PE it expects; nothing is left behind.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "gpucomm/core/error.hpp"
#include "heap/fd_server.hpp"

namespace gpucomm::heap {
namespace {

using std::chrono::seconds;

// A memfd with a recognizable first word, to check that what arrives is the served one.
struct Memfd {
  Memfd() {
    fd = ::memfd_create("fdx-test", MFD_CLOEXEC);
    [[maybe_unused]] int rc = ::ftruncate(fd, 4096);
    [[maybe_unused]] ssize_t w = ::pwrite(fd, &kMark, sizeof kMark, 0);
  }
  ~Memfd() { ::close(fd); }
  static constexpr uint64_t kMark = 0x5eed5eed5eedULL;
  int fd = -1;
};

uint64_t mark_of(int fd) {
  uint64_t v = 0;
  [[maybe_unused]] ssize_t r = ::pread(fd, &v, sizeof v, 0);
  return v;
}

// Serves `server` on a thread for up to `secs`; the result (an error text or "") lands in `error`.
std::thread serve(FdServer& server, std::string& error, int secs = 20) {
  return std::thread([&server, &error, secs] {
    try {
      server.serve(FdClock::now() + seconds(secs), nullptr);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
}

// Connects to `path` as a foreign client sending `bytes`; returns the descriptors it received.
int foreign_request(const std::string& path, const std::string& bytes, int* connect_errno = nullptr) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (connect_errno) *connect_errno = errno;
    ::close(s);
    return 0;
  }
  if (connect_errno) *connect_errno = 0;
  ::send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  uint32_t n = 0;
  iovec iov{&n, sizeof n};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * 8)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  int got = 0;
  if (::recvmsg(s, &msg, MSG_CMSG_CLOEXEC) > 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_type != SCM_RIGHTS) continue;
      for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i, ++got) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        ::close(fd);
      }
    }
  }
  ::close(s);
  return got;
}

// The request format a PE sends, with a made-up secret.
std::string forged_request(int rank) {
  std::string r(4 + 4 + 32, '\0');
  const uint32_t magic = 0x58444647;
  std::memcpy(r.data(), &magic, 4);
  std::memcpy(r.data() + 4, &rank, 4);
  for (size_t i = 8; i < r.size(); ++i) r[i] = static_cast<char>(i * 13);
  return r;
}

// Runs `fn` in a child process. Call it while this process has no other thread (before serve()):
// the child may allocate.
template <class Fn>
pid_t spawn(Fn fn) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(fn());
  return pid;
}
int exit_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A server of one memfd that expects rank 1 to be this process, serving on a thread once
// start() is called; real_pe_is_served() then fetches as rank 1 and checks the counts.
class FdExchangeServed : public ::testing::Test {
 protected:
  void SetUp() override { server.expect({{1, ::getpid()}}); }
  void TearDown() override {
    if (serving.joinable()) serving.join();
  }
  void start() { serving = serve(server, error); }
  void real_pe_is_served(uint64_t rejected) {
    auto fds = fetch_fds(server.path(), ::getpid(), 0, 1, secret, FdClock::now() + seconds(10));
    serving.join();
    ASSERT_EQ(fds.size(), 1u);
    EXPECT_EQ(mark_of(fds[0]), Memfd::kMark);
    ::close(fds[0]);
    EXPECT_EQ(error, "");
    EXPECT_EQ(server.stats().served, 1u);
    EXPECT_EQ(server.stats().rejected, rejected);
  }

  Memfd m;
  FdSecret secret = random_secret();
  FdServer server{{m.fd}, secret};
  std::string error;
  std::thread serving;
};

TEST(FdExchangeHostile, DirectoryIsPrivateAndRemovedAfterwards) {
  Memfd m;
  std::string dir, path;
  {
    FdServer server({m.fd}, random_secret());
    path = server.path();
    dir = path.substr(0, path.rfind('/'));
    struct stat st{};
    ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_EQ(st.st_uid, ::geteuid());
  }
  struct stat st{};
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << path << " left behind";
  EXPECT_NE(::lstat(dir.c_str(), &st), 0) << dir << " left behind";
}

// CI runs as root, so this always runs there (setpriv/setresuid to an unprivileged user).
TEST_F(FdExchangeServed, AnotherUserCannotReachTheSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "switching to another user needs root (CI runs as root)";
  // As user nobody, with a well-formed request: no way in.
  const std::string path = server.path();
  const std::string request = forged_request(1);
  const pid_t child = spawn([&] {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
      return 10;
    int err = 0;
    const int got = foreign_request(path, request, &err);
    if (got > 0) return 1;                // received descriptors
    return err == EACCES ? 0 : 20 + err;  // refused by the directory's permissions
  });
  start();
  const int status = exit_status(child);
  EXPECT_EQ(status, 0) << "user nobody reached the socket (status " << status << ")";
  real_pe_is_served(0);  // nobody never got as far as the server
}

TEST_F(FdExchangeServed, WrongSecretGetsNothingAndIsNotCounted) {
  start();
  EXPECT_EQ(foreign_request(server.path(), forged_request(1)), 0);               // right pid and rank, wrong secret
  EXPECT_EQ(foreign_request(server.path(), forged_request(1).substr(0, 9)), 0);  // short request
  FdSecret other = secret;
  other[5] ^= 1;
  try {
    fetch_fds(server.path(), ::getpid(), 0, 1, other, FdClock::now() + seconds(5));
    ADD_FAILURE() << "a wrong secret got descriptors";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::peer_failure) << e.what();
  }
  real_pe_is_served(3);
}

TEST_F(FdExchangeServed, ProcessThatIsNotThePeIsRefused) {
  // Another process of this user, even with the secret and the rank: its pid is not rank 1's.
  const std::string path = server.path();
  const FdSecret right = secret;
  const pid_t child = spawn([&] {
    try {
      auto fds = fetch_fds(path, ::getppid(), 0, 1, right, FdClock::now() + seconds(5));
      return fds.empty() ? 0 : 1;
    } catch (const Error&) {
      return 0;
    }
  });
  start();
  EXPECT_EQ(exit_status(child), 0) << "a process that is not the PE received descriptors";
  real_pe_is_served(1);
}

TEST_F(FdExchangeServed, SilentClientIsDroppedAtItsDeadline) {
  start();
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, server.path().c_str(), sizeof a.sun_path - 1);
  int silent = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const auto start_at = FdClock::now();
  real_pe_is_served(1);
  EXPECT_LT(FdClock::now() - start_at, FdServer::kRequestDeadline + seconds(2));
  ::close(silent);
}

TEST(FdExchangeHostile, ClientChecksTheServersProcess) {
  Memfd m;
  const FdSecret secret = random_secret();
  FdServer server({m.fd}, secret);
  try {
    fetch_fds(server.path(), ::getpid() + 1, 0, 1, secret, FdClock::now() + seconds(2));
    ADD_FAILURE() << "the client accepted a server of another process";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::protocol) << e.what();
    EXPECT_NE(std::string(e.what()).find("not by rank 0"), std::string::npos) << e.what();
  }
}

TEST(FdExchangeHostile, EveryReceiveHasADeadline) {
  // A server that accepts and never answers: the client gives up at its deadline.
  Memfd m;
  FdServer server({m.fd}, random_secret());  // listens, but nobody calls serve()
  const auto start = FdClock::now();
  try {
    fetch_fds(server.path(), ::getpid(), 0, 1, random_secret(), FdClock::now() + std::chrono::milliseconds(300));
    ADD_FAILURE() << "a silent server did not time out";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout) << e.what();
  }
  EXPECT_LT(FdClock::now() - start, seconds(3));
}

TEST(FdExchangeHostile, ServerTimesOutNamingWhoNeverAsked) {
  Memfd m;
  FdServer server({m.fd}, random_secret());
  server.expect({{1, ::getpid()}, {3, ::getpid()}});
  try {
    server.serve(FdClock::now() + std::chrono::milliseconds(300), nullptr);
    ADD_FAILURE() << "serve() returned without its peers";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
    EXPECT_NE(std::string(e.what()).find("rank(s) 1,3 never asked"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpucomm::heap
