#pragma once
// GPUCOMM_HD marks small functions that host and device code share (the protocol checks, the
// operation codes, the matching envelopes): inline host-and-device functions under nvcc, inline
// host functions elsewhere (host-only translation units, the SIMT emulation of the tests).
#if defined(__CUDACC__)
#define GPUCOMM_HD __host__ __device__ __forceinline__
#else
#define GPUCOMM_HD inline
#endif
