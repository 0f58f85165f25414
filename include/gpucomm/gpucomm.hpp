#pragma once
// gpucomm host API: the runtime (PEs, teams, symmetric heap, host one-sided operations).
#include "gpucomm/core/error.hpp"
#include "gpucomm/runtime/runtime.hpp"
#include "gpucomm/version.hpp"
