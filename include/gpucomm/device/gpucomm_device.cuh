#pragma once
// The whole device API: include this from any .cu file (no -rdc, no device linking).
#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/base/team.hpp"
#include "gpucomm/device/atomic_device.cuh"
#include "gpucomm/device/barrier_device.cuh"
#include "gpucomm/device/rma_device.cuh"
