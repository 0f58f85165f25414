// Names of the shared operation codes and the host-side handle checks.
#include <string>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ops.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"

namespace gpucomm {

const char* cmp_name(Cmp c) {
  switch (c) {
    case Cmp::eq:
      return "==";
    case Cmp::ne:
      return "!=";
    case Cmp::gt:
      return ">";
    case Cmp::ge:
      return ">=";
    case Cmp::lt:
      return "<";
    case Cmp::le:
      return "<=";
  }
  return "?";
}

const char* signal_op_name(SignalOp s) {
  switch (s) {
    case SignalOp::set:
      return "set";
    case SignalOp::add:
      return "add";
  }
  return "?";
}

const char* atomic_op_name(AtomicOp a) {
  switch (a) {
    case AtomicOp::fetch:
      return "fetch";
    case AtomicOp::set:
      return "set";
    case AtomicOp::fetch_add:
      return "fetch_add";
    case AtomicOp::swap:
      return "swap";
    case AtomicOp::compare_swap:
      return "compare_swap";
    case AtomicOp::fetch_and:
      return "fetch_and";
    case AtomicOp::fetch_or:
      return "fetch_or";
    case AtomicOp::fetch_xor:
      return "fetch_xor";
  }
  return "?";
}

const char* device_op_name(DeviceOp op) {
  switch (op) {
    case DeviceOp::none:
      return "device operation";
    case DeviceOp::put:
      return "put";
    case DeviceOp::get:
      return "get";
    case DeviceOp::p:
      return "p";
    case DeviceOp::g:
      return "g";
    case DeviceOp::put_signal:
      return "put_signal";
    case DeviceOp::signal:
      return "signal";
    case DeviceOp::signal_wait_until:
      return "signal_wait_until";
    case DeviceOp::wait_until:
      return "wait_until";
    case DeviceOp::test:
      return "test";
    case DeviceOp::atomic:
      return "atomic";
    case DeviceOp::barrier_master:
      return "barrier_master";
    case DeviceOp::barrier_dissemination:
      return "barrier_dissemination";
    case DeviceOp::ptr:
      return "ptr";
    case DeviceOp::copy:
      return "copy";
    case DeviceOp::proxy_post:
      return "posting to the proxy queue";
    case DeviceOp::proxy_wait:
      return "waiting for the proxy";
    case DeviceOp::quiet:
      return "quiet";
    case DeviceOp::handle_check:
      return "handle check";
    case DeviceOp::team_barrier:
      return "team barrier";
    case DeviceOp::team:
      return "team operation";
    case DeviceOp::message:
      return "messaging";
  }
  return "device operation";
}

namespace {
template <class H>
void validate(const H& h, uint32_t magic, const char* type, const char* what) {
  if (h.magic != magic) {
    raise_arg(what, type,
              "magic " + hex(h.magic) + " is not " + hex(magic) + ": not a " + type +
                  " made by gpucomm (uninitialized or corrupted)");
  }
  if (h.version != kHandleVersion) {
    raise_arg(what, type,
              "version " + std::to_string(h.version) + " is not this library's " + std::to_string(kHandleVersion) +
                  ": the code that made it was built against other gpucomm headers");
  }
  if (h.bytes != sizeof(H)) {
    raise_arg(what, type,
              "size " + std::to_string(h.bytes) + " is not this library's " + std::to_string(sizeof(H)) + " bytes");
  }
}
}  // namespace

void validate_handle(const DeviceHandle& h, const char* what) {
  validate(h, kHandleMagic, "DeviceHandle", what);
}

void validate_handle(const TeamHandle& t, const char* what) {
  validate(t, kTeamMagic, "TeamHandle", what);
  if (t.slot < 0 || t.slot >= kMaxTeams)
    raise_arg(what, "TeamHandle", "slot " + std::to_string(t.slot) + " is outside 0.." + std::to_string(kMaxTeams - 1));
  if (t.size < 1 || t.rank < 0 || t.rank >= t.size) {
    raise_arg(what, "TeamHandle",
              "rank " + std::to_string(t.rank) + " of size " + std::to_string(t.size) + " is not a member index");
  }
}

}  // namespace gpucomm
