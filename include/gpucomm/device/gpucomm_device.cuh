#pragma once
// The whole device API: include this from any .cu file (no -rdc, no device linking).
#include "gpucomm/device/atomic_device.cuh"
#include "gpucomm/device/barrier_device.cuh"
#include "gpucomm/device/coop.cuh"
#include "gpucomm/device/handle.hpp"
#include "gpucomm/device/rma_device.cuh"
