#include "gpucomm/trace/functions.hpp"

#include <string>

#include "function_table.hpp"

namespace gpucomm::trace {
namespace {
thread_local std::string g_unknown_name;
}

std::string_view function_name(uint16_t id) noexcept {
  if (id < detail::kFunctionRows) return detail::function_rows()[id].name;
  if (id == fid::kEndOfStream) return "DUMPI_END_OF_STREAM";
  g_unknown_name = "DUMPI_function_" + std::to_string(id);
  return g_unknown_name;
}

std::string_view function_short_name(uint16_t id) noexcept {
  std::string_view n = function_name(id);
  if (n.starts_with("MPI_")) n.remove_prefix(4);
  return n;
}

FuncClass function_class(uint16_t id) noexcept {
  if (id < detail::kFunctionRows) return detail::function_rows()[id].cls;
  return FuncClass::marker;
}

bool is_nonblocking(uint16_t id) noexcept {
  switch (id) {
    case fid::Isend:
    case fid::Ibsend:
    case fid::Issend:
    case fid::Irsend:
    case fid::Irecv:
    case fid::Start:
    case fid::Startall:
      return true;
    default:
      return false;
  }
}

int function_id(std::string_view name) noexcept {
  for (int i = 0; i < detail::kFunctionRows; ++i) {
    std::string_view full = detail::function_rows()[i].name;
    if (full == name) return i;
    if (full.starts_with("MPI_") && full.substr(4) == name) return i;
  }
  return -1;
}

bool is_communicating(FuncClass c) noexcept {
  switch (c) {
    case FuncClass::p2p_send:
    case FuncClass::p2p_recv:
    case FuncClass::p2p_sendrecv:
    case FuncClass::completion:
    case FuncClass::probe:
    case FuncClass::start:
    case FuncClass::collective:
    case FuncClass::rma:
      return true;
    default:
      return false;
  }
}

}  // namespace gpucomm::trace
