#pragma once
// Listening sockets opened ahead of the store that will serve on them: by UniqueId::create
// (port reserved at creation) or inherited from `gpucomm run` (GPUCOMM_BOOTSTRAP_LISTEN_FD).
#include <map>
#include <mutex>
#include <string>

#include "socket.hpp"

namespace gpucomm::bootstrap {

class ListenRegistry {
 public:
  static ListenRegistry& instance();
  void put(const std::string& endpoint, Fd fd);
  // Takes the socket for `endpoint` if one was opened ahead; returns an empty Fd otherwise.
  Fd take(const std::string& endpoint);

 private:
  std::mutex mu_;
  std::map<std::string, Fd> fds_;
};

}  // namespace gpucomm::bootstrap
