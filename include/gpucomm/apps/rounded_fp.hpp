#pragma once
// The arithmetic of the stencil applications (Aliev-Panfilov in fp64, Himeno in fp32), each
// operation rounded on its own, so that every model's result equals the CPU reference bit for bit:
// HostFp with plain operators (the host sources are compiled without FMA contraction: x86-64
// without -mfma has none, and the Himeno host files pass -ffp-contract=off), DeviceFp with the
// GPU's rounding intrinsics (nvcc would otherwise fuse a multiply and an add). Overloads for float
// and double: a call that mixes them does not compile.
#include "gpucomm/base/hd.hpp"

namespace gpucomm::apps {

struct HostFp {
  static double add(double x, double y) { return x + y; }
  static double sub(double x, double y) { return x - y; }
  static double mul(double x, double y) { return x * y; }
  static double div(double x, double y) { return x / y; }
  static float add(float x, float y) { return x + y; }
  static float sub(float x, float y) { return x - y; }
  static float mul(float x, float y) { return x * y; }
  static float div(float x, float y) { return x / y; }
};

namespace device {

#if defined(__CUDA_ARCH__)
#define GPUCOMM_APPS_ROUNDED(dev, op) return dev(x, y)
#else
#define GPUCOMM_APPS_ROUNDED(dev, op) return x op y
#endif

struct DeviceFp {
  GPUCOMM_HD static double add(double x, double y) { GPUCOMM_APPS_ROUNDED(__dadd_rn, +); }
  GPUCOMM_HD static double sub(double x, double y) { GPUCOMM_APPS_ROUNDED(__dsub_rn, -); }
  GPUCOMM_HD static double mul(double x, double y) { GPUCOMM_APPS_ROUNDED(__dmul_rn, *); }
  GPUCOMM_HD static double div(double x, double y) { GPUCOMM_APPS_ROUNDED(__ddiv_rn, /); }
  GPUCOMM_HD static float add(float x, float y) { GPUCOMM_APPS_ROUNDED(__fadd_rn, +); }
  GPUCOMM_HD static float sub(float x, float y) { GPUCOMM_APPS_ROUNDED(__fsub_rn, -); }
  GPUCOMM_HD static float mul(float x, float y) { GPUCOMM_APPS_ROUNDED(__fmul_rn, *); }
  GPUCOMM_HD static float div(float x, float y) { GPUCOMM_APPS_ROUNDED(__fdiv_rn, /); }
};

#undef GPUCOMM_APPS_ROUNDED

}  // namespace device
}  // namespace gpucomm::apps
