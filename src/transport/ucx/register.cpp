// Registers the "ucx" transport when the library is loaded (open_remote dlopens it).
#include <exception>
#include <memory>

#include "gpucomm/core/log.hpp"
#include "remote.hpp"

namespace gpucomm::transport::ucx {
namespace {
// An exception cannot leave a static initializer of a dlopened library; should the registration
// fail (out of memory), open_remote reports that no "ucx" transport could be loaded, and the log
// says why.
bool register_ucx() noexcept {
  try {
    register_remote(
        "ucx", [](const RemoteContext& ctx) -> std::unique_ptr<Remote> { return std::make_unique<UcxRemote>(ctx); });
    return true;
  } catch (const std::exception& e) {
    GPUCOMM_LOG(error, "the ucx transport could not register itself: " << e.what());
    return false;
  }
}
const bool registered = register_ucx();
}  // namespace
}  // namespace gpucomm::transport::ucx
