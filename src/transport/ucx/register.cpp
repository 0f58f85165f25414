// Registers the "ucx" transport when the library is loaded (open_remote dlopens it).
#include <memory>

#include "remote.hpp"

namespace gpucomm::transport::ucx {
namespace {
const bool registered = [] {
  register_remote("ucx",
                  [](const RemoteContext& ctx) -> std::unique_ptr<Remote> { return std::make_unique<UcxRemote>(ctx); });
  return true;
}();
}  // namespace
}  // namespace gpucomm::transport::ucx
