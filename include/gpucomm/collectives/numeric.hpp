#pragma once
// Numbers of the collectives (docs/COLLECTIVES.md, "Accumulation and determinism"): each data type's
// storage type S and accumulation type A, the conversions between them, and the reductions.
// Low-precision types accumulate in f32 and round once, to nearest even (FP8 saturating to the
// largest finite value, NaN to the type's canonical NaN). On the GPU the conversions are the CUDA
// instructions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h); on the host they are the bit-exact integer
// implementations below, tested against CUDA's own host code and against the GPU. Low-precision
// values are handled as their raw bits (uint8_t, uint16_t) so host and device code share them.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpucomm/base/hd.hpp"
#include "gpucomm/collectives/types.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace gpucomm::coll {

namespace num {

GPUCOMM_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
GPUCOMM_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Rounds the `shift` low bits of `v` away, to nearest even (shift 1..40).
GPUCOMM_HD uint64_t round_shift(uint64_t v, unsigned shift) {
  const uint64_t r = v >> shift, rem = v & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
  return r + ((rem > half || (rem == half && (r & 1))) ? 1 : 0);
}

// ---- host implementations (the reference for the GPU instructions) ----

// f32 -> f16, round to nearest even; NaN -> 0x7fff; overflow -> infinity.
GPUCOMM_HD uint16_t f32_to_f16_host(float f) {
  const uint32_t x = float_bits(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fff;
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  if (a >= 0x38800000u) {                                              // normal half (>= 2^-14)
    return static_cast<uint16_t>(sign | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
  }
  if (a <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: zero (the tie goes to even)
  // Subnormal half: value / 2^-24 = mantissa24 * 2^(e - 126 - 23 + 23) -> shift = 126 - e.
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | round_shift(m, 126u - e));
}
GPUCOMM_HD float f16_to_f32_host(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(m ? 0x7fffffffu : (sign | 0x7f800000u));
  if (e == 0) {
    const float v = static_cast<float>(m) * (1.0f / 16777216.0f);  // m * 2^-24, exact
    return sign ? -v : v;
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// f32 -> bf16, round to nearest even; NaN -> 0x7fff.
GPUCOMM_HD uint16_t f32_to_bf16_host(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
GPUCOMM_HD float bf16_to_f32_host(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

// f32 -> FP8 (M mantissa bits, exponent bias B, largest finite code `maxnorm`, largest finite
// exponent field `emax`), round to nearest even, saturating; NaN -> 0x7f.
template <unsigned M, unsigned B, unsigned maxnorm, unsigned emax>
GPUCOMM_HD uint8_t f32_to_fp8_host(float f) {
  const uint32_t x = float_bits(f), sign = (x >> 24) & 0x80u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  const int e = static_cast<int>(a >> 23) - 127;          // unbiased exponent of a normal float
  if ((a >> 23) == 0) return static_cast<uint8_t>(sign);  // float subnormals are far below FP8's range
  const uint64_t m = (a & 0x7fffffu) | 0x800000u;         // 24 bits with the implicit one
  const int emin = 1 - static_cast<int>(B);
  uint64_t code;
  if (e >= emin) {
    if (e + static_cast<int>(B) > static_cast<int>(emax)) return static_cast<uint8_t>(sign | maxnorm);
    // exponent field and mantissa together, rounded: the carry moves into the exponent.
    code = round_shift((static_cast<uint64_t>(e + static_cast<int>(B)) << 23) | (m & 0x7fffffu), 23u - M);
  } else {
    // Subnormal FP8: value / 2^(emin - M) = m * 2^(e - 23 - emin + M).
    const int shift = 23 + emin - static_cast<int>(M) - e;
    code = shift >= 26 ? 0 : round_shift(m, static_cast<unsigned>(shift));
  }
  if (code > maxnorm) code = maxnorm;
  return static_cast<uint8_t>(sign | code);
}
template <unsigned M, unsigned B, bool has_inf>
GPUCOMM_HD float fp8_to_f32_host(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  const uint32_t e = (v & 0x7fu) >> M, m = v & ((1u << M) - 1u);
  const uint32_t top = (0x7fu >> M);
  if (has_inf ? e == top : (e == top && m == (1u << M) - 1u)) {
    return bits_float((has_inf && m == 0) ? (sign | 0x7f800000u) : 0x7fffffffu);
  }
  if (e == 0) {
    // m * 2^(1 - B - M), exact
    const float v0 = static_cast<float>(m) * bits_float((127u + 1u - B - M) << 23);
    return sign ? -v0 : v0;
  }
  return bits_float(sign | ((e + 127u - B) << 23) | (m << (23u - M)));
}

GPUCOMM_HD uint8_t f32_to_e4m3_host(float f) {
  return f32_to_fp8_host<3, 7, 0x7e, 15>(f);
}
GPUCOMM_HD uint8_t f32_to_e5m2_host(float f) {
  return f32_to_fp8_host<2, 15, 0x7b, 30>(f);
}
GPUCOMM_HD float e4m3_to_f32_host(uint8_t v) {
  return fp8_to_f32_host<3, 7, false>(v);
}
GPUCOMM_HD float e5m2_to_f32_host(uint8_t v) {
  return fp8_to_f32_host<2, 15, true>(v);
}

}  // namespace num

// Storage type S, accumulation type A, and the conversions of each data type.
template <DataType DT>
struct Num;

template <>
struct Num<DataType::f8e4m3> {
  using S = uint8_t;
  using A = float;
  static GPUCOMM_HD A to_acc(S s) {
#if defined(__CUDA_ARCH__)
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(s, __NV_E4M3)));
#else
    return num::e4m3_to_f32_host(s);
#endif
  }
  static GPUCOMM_HD S from_acc(A a) {
#if defined(__CUDA_ARCH__)
    return __nv_cvt_float_to_fp8(a, __NV_SATFINITE, __NV_E4M3);
#else
    return num::f32_to_e4m3_host(a);
#endif
  }
};
template <>
struct Num<DataType::f8e5m2> {
  using S = uint8_t;
  using A = float;
  static GPUCOMM_HD A to_acc(S s) {
#if defined(__CUDA_ARCH__)
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(s, __NV_E5M2)));
#else
    return num::e5m2_to_f32_host(s);
#endif
  }
  static GPUCOMM_HD S from_acc(A a) {
#if defined(__CUDA_ARCH__)
    return __nv_cvt_float_to_fp8(a, __NV_SATFINITE, __NV_E5M2);
#else
    return num::f32_to_e5m2_host(a);
#endif
  }
};
template <>
struct Num<DataType::f16> {
  using S = uint16_t;
  using A = float;
  static GPUCOMM_HD A to_acc(S s) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(s));
#else
    return num::f16_to_f32_host(s);
#endif
  }
  static GPUCOMM_HD S from_acc(A a) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(a));
#else
    return num::f32_to_f16_host(a);
#endif
  }
};
template <>
struct Num<DataType::bf16> {
  using S = uint16_t;
  using A = float;
  static GPUCOMM_HD A to_acc(S s) {
#if defined(__CUDA_ARCH__)
    return __bfloat162float(__ushort_as_bfloat16(s));
#else
    return num::bf16_to_f32_host(s);
#endif
  }
  static GPUCOMM_HD S from_acc(A a) {
#if defined(__CUDA_ARCH__)
    return __bfloat16_as_ushort(__float2bfloat16_rn(a));
#else
    return num::f32_to_bf16_host(a);
#endif
  }
};

// Types that accumulate in themselves.
template <class T>
struct SameNum {
  using S = T;
  using A = T;
  static GPUCOMM_HD A to_acc(S s) { return s; }
  static GPUCOMM_HD S from_acc(A a) { return a; }
};
template <>
struct Num<DataType::f32> : SameNum<float> {};
template <>
struct Num<DataType::f64> : SameNum<double> {};
template <>
struct Num<DataType::i32> : SameNum<int32_t> {};
template <>
struct Num<DataType::i64> : SameNum<int64_t> {};
template <>
struct Num<DataType::u32> : SameNum<uint32_t> {};
template <>
struct Num<DataType::u64> : SameNum<uint64_t> {};

template <class A>
struct Unsigned {
  using type = A;
};
template <>
struct Unsigned<int32_t> {
  using type = uint32_t;
};
template <>
struct Unsigned<int64_t> {
  using type = uint64_t;
};

// One reduction step on the accumulation type: op(a, b), `a` the running value. Integer sums and
// products wrap (computed on the unsigned bits); min/max of floats compare with `<`. The
// reduction is a run-time value: one instantiation per type serves every reduction (the branch is
// uniform across threads and loop-invariant).
template <class A>
GPUCOMM_HD A apply(RedOp op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = typename Unsigned<A>::type;
    switch (op) {
      case RedOp::sum:
        return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case RedOp::prod:
        return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case RedOp::min:
        return b < a ? b : a;
      case RedOp::max:
        return a < b ? b : a;
      case RedOp::band:
        return a & b;
      case RedOp::bor:
        return a | b;
      case RedOp::bxor:
        return a ^ b;
    }
    return a;
  } else {
    switch (op) {
      case RedOp::sum:
        return a + b;
      case RedOp::prod:
        return a * b;
      case RedOp::min:
        return b < a ? b : a;
      case RedOp::max:
        return a < b ? b : a;
      default:
        return a;  // bitwise operations on floats are refused before they get here
    }
  }
}

// Whether a (type, reduction) pair exists.
GPUCOMM_HD constexpr bool valid_pair(DataType t, RedOp op) {
  return !is_bitwise(op) || is_integer(t);
}

}  // namespace gpucomm::coll
