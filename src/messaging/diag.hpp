#pragma once
// Text of the messaging layer's failure records (Diag): who waited for what, which argument was
// bad, what broke.
#include <string>

#include "gpucomm/messaging/layout.hpp"

namespace gpucomm::msg::detail {

std::string describe(const Diag& d, const Config& c);
// Raises the gpucomm::Error a Diag describes (timeout, invalid_argument, peer_failure, protocol,
// out_of_memory).
[[noreturn]] void raise_diag(const Diag& d, const Config& c);

}  // namespace gpucomm::msg::detail
