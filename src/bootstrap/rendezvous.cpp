#include "rendezvous.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "socket.hpp"

namespace gpucomm::bootstrap {
namespace {

// 128-bit FNV-1a style mix of the job identity: a token both sides can derive without talking.
std::array<uint8_t, 16> derive_token(const std::string& seed) {
  uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0x84222325cbf29ce4ULL;
  for (unsigned char c : seed) {
    h1 = (h1 ^ c) * 0x100000001b3ULL;
    h2 = (h2 ^ c) * 0x100000001b3ULL + (h1 >> 29);
  }
  std::array<uint8_t, 16> t{};
  for (int i = 0; i < 8; ++i) {
    t[i] = static_cast<uint8_t>(h1 >> (8 * i));
    t[8 + i] = static_cast<uint8_t>(h2 >> (8 * i));
  }
  return t;
}

std::string rendezvous_file(const LaunchInfo& info) {
  std::string id;
  for (char c : info.job_id) id += (isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return env::get_string("GPUCOMM_BOOTSTRAP_DIR", "/tmp") + "/gpucomm-" + info.launcher + "-" + id + ".uid";
}

UniqueId from_address(const LaunchInfo& info) {
  UniqueId id;
  split_host_port(info.store_addr, "GPUCOMM_BOOTSTRAP_ADDR", &id.host, &id.port);
  if (auto t = env::get("GPUCOMM_BOOTSTRAP_TOKEN"); t && !t->empty()) {
    id.token = derive_token("token|" + *t);
  } else {
    id.token = derive_token(info.token_seed);
  }
  // Numeric address, so that rank 0 can bind it and the id compares equal everywhere.
  id.host = resolve(id.host, id.port).host();
  return id;
}

UniqueId via_file(const LaunchInfo& info, std::string* how) {
  std::string path = rendezvous_file(info);
  *how = "file rendezvous " + path;
  if (info.rank == 0) {
    ::unlink(path.c_str());  // a stale file of an earlier job with the same id
    UniqueId id = UniqueId::create(env::get_string("GPUCOMM_BOOTSTRAP_IFNAME", ""));
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) raise_errno("bootstrap rendezvous", errno, "cannot create " + tmp + " (GPUCOMM_BOOTSTRAP_DIR)");
    std::string text = id.to_string() + "\n";
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
      raise_errno("bootstrap rendezvous", errno, "cannot write " + path);
    return id;
  }
  auto timeout = std::chrono::duration<double>(env::get_double("GPUCOMM_BOOTSTRAP_TIMEOUT", 30.0));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) {
      UniqueId id = UniqueId::parse(line, path);
      // The file may be a stale one that rank 0 has not replaced yet: check that it serves.
      try {
        connect_tcp(id.host, id.port, std::chrono::milliseconds(200));
        return id;
      } catch (const Error& e) {
        // Not serving (yet): rank 0 may still be replacing a stale file; retry until the deadline,
        // whose error names the file.
        GPUCOMM_LOG(debug, "bootstrap rendezvous: " << path << " names " << id.endpoint()
                                                    << ", which does not answer yet: " << e.what());
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      raise(Errc::timeout, "bootstrap rendezvous",
            "rank " + std::to_string(info.rank) + " found no live store address in " + path + " within " +
                std::to_string(timeout.count()).substr(0, 5) +
                " s (did rank 0 start? is GPUCOMM_BOOTSTRAP_DIR shared?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

UniqueId rendezvous(const LaunchInfo& info, std::string* how) {
  std::string method = env::get_string("GPUCOMM_BOOTSTRAP", "auto");
  if (method != "auto" && method != "tcp" && method != "mpi")
    raise_arg("bootstrap", "GPUCOMM_BOOTSTRAP", "'" + method + "' is not auto, tcp or mpi");
  if (!info.unique_id.empty()) {
    *how = "unique id from GPUCOMM_UNIQUE_ID";
    return UniqueId::parse(info.unique_id, "GPUCOMM_UNIQUE_ID");
  }
  if (info.size == 1) {
    *how = "single PE";
    return UniqueId::create("");
  }
  if (method == "mpi" || (method == "auto" && mpi_available() && mpi_already_initialized())) {
    *how = "unique id broadcast over MPI";
    return mpi_share_unique_id(info);
  }
  if (!info.store_addr.empty()) {
    *how = "store address " + info.store_addr;
    return from_address(info);
  }
  if (info.single_node() && !info.job_id.empty()) return via_file(info, how);
  raise(
      Errc::invalid_argument, "bootstrap",
      "started by " + info.launcher + " with " + std::to_string(info.size) +
          " PEs but no way to find rank 0's store: set GPUCOMM_BOOTSTRAP_ADDR=HOST:PORT (an address of rank 0's host), "
          "pass GPUCOMM_UNIQUE_ID, or use GPUCOMM_BOOTSTRAP=mpi with an MPI-enabled build");
}

void finish_rendezvous(const LaunchInfo& info, Bootstrap& b) {
  if (info.unique_id.empty() && info.store_addr.empty() && info.size > 1 && info.single_node() &&
      !info.job_id.empty()) {
    b.barrier();  // every PE has read the file
    if (info.rank == 0) ::unlink(rendezvous_file(info).c_str());
  }
}

}  // namespace gpucomm::bootstrap
