#pragma once
// UCX status codes in gpucomm errors.
#include <ucs/type/status.h>

#include <string>

#include "gpucomm/core/error.hpp"

namespace gpucomm::transport::ucx {

// "Connection reset by remote peer (-25)".
std::string status_text(ucs_status_t s);

// Raises `code` for a UCX call that returned `s`: "<what>: UCX <call> failed: <status>".
[[noreturn]] void raise_status(Errc code, const std::string& call, const std::string& what, ucs_status_t s);

// The gpucomm error class of a failed UCX operation: a lost connection is a peer failure.
Errc errc_for(ucs_status_t s);

inline void check(ucs_status_t s, Errc code, const char* call, const std::string& what) {
  if (s != UCS_OK) raise_status(code, call, what, s);
}

}  // namespace gpucomm::transport::ucx
