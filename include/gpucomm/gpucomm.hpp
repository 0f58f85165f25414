#pragma once
// gpucomm host API: the runtime (PEs, teams, symmetric heap, host one-sided operations), the
// operation codes and the handles kernels receive (device code includes
// gpucomm/device/gpucomm_device.cuh besides).
#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ops.hpp"
#include "gpucomm/base/team.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/runtime/runtime.hpp"
#include "gpucomm/version.hpp"
