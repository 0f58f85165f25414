#include "ucx_status.hpp"

namespace gpucomm::transport::ucx {

std::string status_text(ucs_status_t s) {
  return std::string(ucs_status_string(s)) + " (" + std::to_string(static_cast<int>(s)) + ")";
}

Errc errc_for(ucs_status_t s) {
  switch (s) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CANCELED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_TIMED_OUT:
      return Errc::peer_failure;
    case UCS_ERR_NO_MEMORY:
      return Errc::out_of_memory;
    case UCS_ERR_UNSUPPORTED:
      return Errc::unsupported;
    default:
      return Errc::internal;
  }
}

void raise_status(Errc code, const std::string& call, const std::string& what, ucs_status_t s) {
  raise(code, what, "UCX " + call + " failed: " + status_text(s));
}

}  // namespace gpucomm::transport::ucx
