#include "listen_registry.hpp"

namespace gpucomm::bootstrap {

ListenRegistry& ListenRegistry::instance() {
  static ListenRegistry r;
  return r;
}

void ListenRegistry::put(const std::string& endpoint, Fd fd) {
  std::lock_guard<std::mutex> g(mu_);
  fds_[endpoint] = std::move(fd);
}

Fd ListenRegistry::take(const std::string& endpoint) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = fds_.find(endpoint);
  if (it == fds_.end()) return Fd();
  Fd fd = std::move(it->second);
  fds_.erase(it);
  return fd;
}

}  // namespace gpucomm::bootstrap
