#pragma once
// The communicator as kernels see it: a POD passed by value (Comm::device()), versioned like the
// base handles ({magic, version, bytes} first; checked by the device API in checked builds and by
// the host whenever a handle comes back). It carries the PE's DeviceHandle (the one-sided layer
// under the protocol), the communicator's team, its context id and mode, and the StateView of the
// PE's messaging state by value: kernels read its pointers from the parameter bank instead of
// chasing a pointer into device memory (whose L1 copy every acquire load invalidates).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/messaging/layout.hpp"
#include "gpucomm/messaging/types.hpp"

namespace gpucomm::msg {

inline constexpr uint32_t kCommMagic = 0x47534d43u;  // "CMSG" in memory order
// Bumped whenever CommHandle, StateView or the tables it points to change layout or meaning.
inline constexpr uint16_t kCommVersion = 2;

struct CommHandle {
  uint32_t magic;    // kCommMagic
  uint16_t version;  // kCommVersion
  uint16_t bytes;    // sizeof(CommHandle)
  int32_t ctx;       // context id
  Mode mode;
  uint32_t flags;  // kCommErrorsReturn, kCommAllowOvertaking
  int32_t rank;    // this PE's rank in the communicator
  int32_t size;
  int32_t reserved;
  TeamHandle team;
  DeviceHandle dev;
  StateView state;  // pointers into device memory (immutable while the Messenger lives)
};

static_assert(std::is_trivially_copyable_v<CommHandle> && std::is_standard_layout_v<CommHandle>,
              "CommHandle is passed to kernels by value");
static_assert(offsetof(CommHandle, bytes) == 6, "the version fields lead the handle");

}  // namespace gpucomm::msg
