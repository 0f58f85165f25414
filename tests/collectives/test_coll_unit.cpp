// Unit tests of the collectives' host-side parts: the bit-exact conversions against CUDA's own
// host code, the plans, the reference, signatures and their texts, and the cost model's choices on
// synthetic topologies.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpucomm/collectives/cost_model.hpp"
#include "gpucomm/collectives/layout.hpp"
#include "gpucomm/collectives/numeric.hpp"
#include "gpucomm/collectives/plan.hpp"
#include "gpucomm/collectives/reference.hpp"
#include "test_support.hpp"

using namespace gpucomm::coll;
using gpucomm::testing::seed_note;
using gpucomm::testing::test_seed;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// CUDA's host implementations (the functions the device instructions are specified by).
uint16_t cuda_f16(float f) {
  __half h = __float2half_rn(f);
  return static_cast<__half_raw>(h).x;
}
uint16_t cuda_bf16(float f) {
  __nv_bfloat16 b = __float2bfloat16_rn(f);
  return static_cast<__nv_bfloat16_raw>(b).x;
}
uint8_t cuda_e4m3(float f) {
  return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3);
}
uint8_t cuda_e5m2(float f) {
  return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2);
}
float cuda_f16_to_f32(uint16_t v) {
  __half_raw r;
  r.x = v;
  return __half2float(__half(r));
}
float cuda_bf16_to_f32(uint16_t v) {
  __nv_bfloat16_raw r;
  r.x = v;
  return __bfloat162float(__nv_bfloat16(r));
}
float cuda_fp8_to_f32(uint8_t v, __nv_fp8_interpretation_t k) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(v, k)));
}

// Floats that probe a conversion: every value of the target, the midpoints between neighbours
// (ties), one float ulp either side, specials, and random patterns.
std::vector<float> probes(const std::vector<float>& values, uint64_t seed) {
  std::vector<float> out = {0.0f,    -0.0f,   INFINITY, -INFINITY, NAN, -NAN, from_bits(1), from_bits(0x807fffff),
                            3.4e38f, -3.4e38f};
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (!std::isfinite(v)) continue;
    out.push_back(v);
    out.push_back(std::nextafter(v, INFINITY));
    out.push_back(std::nextafter(v, -INFINITY));
    if (i + 1 < values.size() && std::isfinite(values[i + 1])) {
      const float mid = static_cast<float>((static_cast<double>(v) + values[i + 1]) / 2);
      out.push_back(mid);
      out.push_back(std::nextafter(mid, INFINITY));
      out.push_back(std::nextafter(mid, -INFINITY));
    }
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 1 << 20; ++i) out.push_back(from_bits(static_cast<uint32_t>(rng())));
  return out;
}

template <class Mine, class Theirs>
void expect_same(const char* what, const std::vector<float>& in, Mine mine, Theirs theirs, uint64_t seed) {
  int bad = 0;
  for (float f : in) {
    const auto a = mine(f), b = theirs(f);
    if (a != b && ++bad <= 5) {
      ADD_FAILURE() << what << "(" << f << " = 0x" << std::hex << bits(f) << "): ours 0x" << +a << ", CUDA's 0x" << +b
                    << std::dec << " " << seed_note(seed);
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

std::vector<float> sorted_values(int count, float (*decode)(uint32_t)) {
  std::vector<float> v;
  for (int i = 0; i < count; ++i) {
    const float f = decode(static_cast<uint32_t>(i));
    if (std::isfinite(f)) v.push_back(f);
  }
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST(CollNumeric, DecodingMatchesCuda) {
  for (uint32_t v = 0; v < 65536; ++v) {
    const float a = num::f16_to_f32_host(static_cast<uint16_t>(v)), b = cuda_f16_to_f32(static_cast<uint16_t>(v));
    EXPECT_TRUE(bits(a) == bits(b) || (std::isnan(a) && std::isnan(b))) << "f16 0x" << std::hex << v;
    const float c = num::bf16_to_f32_host(static_cast<uint16_t>(v)), d = cuda_bf16_to_f32(static_cast<uint16_t>(v));
    EXPECT_TRUE(bits(c) == bits(d) || (std::isnan(c) && std::isnan(d))) << "bf16 0x" << std::hex << v;
  }
  for (uint32_t v = 0; v < 256; ++v) {
    const float a = num::e4m3_to_f32_host(static_cast<uint8_t>(v)),
                b = cuda_fp8_to_f32(static_cast<uint8_t>(v), __NV_E4M3);
    EXPECT_TRUE(bits(a) == bits(b) || (std::isnan(a) && std::isnan(b))) << "e4m3 0x" << std::hex << v;
    const float c = num::e5m2_to_f32_host(static_cast<uint8_t>(v)),
                d = cuda_fp8_to_f32(static_cast<uint8_t>(v), __NV_E5M2);
    EXPECT_TRUE(bits(c) == bits(d) || (std::isnan(c) && std::isnan(d))) << "e5m2 0x" << std::hex << v;
  }
}

TEST(CollNumeric, RoundingMatchesCudaBitForBit) {
  const uint64_t seed = test_seed();
  expect_same(
      "f16",
      probes(sorted_values(65536, [](uint32_t v) { return num::f16_to_f32_host(static_cast<uint16_t>(v)); }), seed),
      num::f32_to_f16_host, cuda_f16, seed);
  expect_same(
      "bf16",
      probes(sorted_values(65536, [](uint32_t v) { return num::bf16_to_f32_host(static_cast<uint16_t>(v)); }), seed),
      num::f32_to_bf16_host, cuda_bf16, seed);
  expect_same(
      "e4m3",
      probes(sorted_values(256, [](uint32_t v) { return num::e4m3_to_f32_host(static_cast<uint8_t>(v)); }), seed),
      num::f32_to_e4m3_host, cuda_e4m3, seed);
  expect_same(
      "e5m2",
      probes(sorted_values(256, [](uint32_t v) { return num::e5m2_to_f32_host(static_cast<uint8_t>(v)); }), seed),
      num::f32_to_e5m2_host, cuda_e5m2, seed);
}

TEST(CollNumeric, IntegerReductionsWrap) {
  EXPECT_EQ(apply<int32_t>(RedOp::sum, INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(apply<int64_t>(RedOp::prod, INT64_MAX, 2), -2);
  EXPECT_EQ(apply<uint32_t>(RedOp::bxor, 0xf0u, 0xffu), 0x0fu);
  EXPECT_EQ(apply<float>(RedOp::min, 2.0f, -1.0f), -1.0f);
  EXPECT_FALSE(valid_pair(DataType::f16, RedOp::band));
  EXPECT_TRUE(valid_pair(DataType::u64, RedOp::bor));
}

TEST(CollPlan, ChannelSlicesPartitionTheBuffer) {
  for (uint64_t count : {0ull, 1ull, 7ull, 37ull, 1000ull, 123457ull}) {
    for (uint32_t ch = 1; ch <= 9; ++ch) {
      for (size_t elem : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
        uint64_t at = 0;
        for (uint32_t c = 0; c < ch; ++c) {
          const Range r = channel_slice(count, ch, c, elem);
          EXPECT_EQ(r.lo, at) << count << " " << ch << " " << c;
          EXPECT_LE(r.lo, r.hi);
          if (r.lo < count && c > 0) {
            EXPECT_EQ(r.lo * elem % 16, 0u);
          }
          at = r.hi;
        }
        EXPECT_EQ(at, count);
      }
    }
  }
}

TEST(CollPlan, EveryAlgorithmFitsTheSmallestWorkspace) {
  for (int n : {2, 3, 8, 16}) {
    Sizes s;
    s.n = n;
    s.slot = 256;
    s.ring = 1024;
    s.ll = 256;
    s.per_node = 1;
    for (int o = 1; o <= static_cast<int>(CollOp::last); ++o) {
      for (int a = 1; a <= static_cast<int>(Algorithm::hierarchical); ++a) {
        const auto op = static_cast<CollOp>(o);
        const auto al = static_cast<Algorithm>(a);
        if (!implements(al, op)) continue;
        for (int t = 0; t <= static_cast<int>(DataType::last); ++t) {
          EXPECT_GT(window_elems(op, al, static_cast<DataType>(t), s), 0u)
              << op_name(op) << " " << algorithm_name(al) << " n=" << n;
        }
      }
    }
  }
}

TEST(CollSignature, FieldsRoundTripAndDifferencesAreNamed) {
  const uint32_t a = signature(CollOp::allreduce, DataType::bf16, RedOp::max, Algorithm::twoshot, 1000, -1, 4);
  EXPECT_EQ(sig_op(a), CollOp::allreduce);
  EXPECT_EQ(sig_type(a), DataType::bf16);
  EXPECT_EQ(sig_redop(a), RedOp::max);
  EXPECT_EQ(sig_algorithm(a), Algorithm::twoshot);
  EXPECT_NE(a, signature(CollOp::allreduce, DataType::bf16, RedOp::max, Algorithm::twoshot, 1001, -1, 4));
  EXPECT_NE(a, signature(CollOp::allreduce, DataType::bf16, RedOp::max, Algorithm::twoshot, 1000, -1, 2));
  EXPECT_TRUE(stamp_reached(stamp_of(5, 3), stamp_of(5, 1)));
  EXPECT_FALSE(stamp_reached(stamp_of(4, 9), stamp_of(5, 0)));
  EXPECT_TRUE(stamp_reached(stamp_of(0x100000, 0), stamp_of(0xfffff, 7)));  // across the 20-bit wrap
  EXPECT_FALSE(stamp_reached(0, stamp_of(1, 0)));                           // a zeroed flag
}

namespace {
std::vector<std::vector<uint8_t>> random_inputs(DataType dt, int n, uint64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(n));
  for (auto& v : in) {
    v.resize(count * type_size(dt));
    for (uint64_t i = 0; i < count; ++i) {
      if (dt == DataType::f16) {
        const uint16_t h = num::f32_to_f16_host(u(rng));
        std::memcpy(v.data() + 2 * i, &h, 2);
      } else {
        const int32_t x = static_cast<int32_t>(rng());
        std::memcpy(v.data() + 4 * i, &x, 4);
      }
    }
  }
  return in;
}
}  // namespace

TEST(CollReference, AlgorithmsAgreeWhereTheDocsSayTheyDo) {
  const uint64_t seed = test_seed();
  const int n = 5;
  const uint64_t count = 3001;
  RefSetup s;
  s.op = CollOp::allreduce;
  s.count = count;
  s.channels = 3;
  s.sizes = Sizes{n, 512, 2048, 512, 0};
  auto run = [&](DataType dt, Algorithm a) {
    s.dt = dt;
    s.algo = a;
    return reference(s, random_inputs(dt, n, count, seed), 2, std::vector<uint8_t>(count * type_size(dt)));
  };
  // Integers: every algorithm gives the same bits.
  EXPECT_EQ(run(DataType::i32, Algorithm::oneshot), run(DataType::i32, Algorithm::multiring)) << seed_note(seed);
  EXPECT_EQ(run(DataType::i32, Algorithm::oneshot), run(DataType::i32, Algorithm::twoshot)) << seed_note(seed);
  // f16 sums: the rank-order algorithms agree; the ring rounds at every hop and usually differs.
  EXPECT_EQ(run(DataType::f16, Algorithm::oneshot), run(DataType::f16, Algorithm::twoshot)) << seed_note(seed);
  EXPECT_EQ(run(DataType::f16, Algorithm::oneshot), run(DataType::f16, Algorithm::oneshot_ll)) << seed_note(seed);
  EXPECT_NE(run(DataType::f16, Algorithm::oneshot), run(DataType::f16, Algorithm::multiring)) << seed_note(seed);
}

// The cost model's choices on synthetic topologies (docs/COLLECTIVES.md lists them).
namespace {
struct Topo {
  const char* name;
  TopoSummary t;
};
Sizes sizes_of(int n) {
  const uint64_t un = static_cast<uint64_t>(n);
  return Sizes{n, std::max<uint64_t>(256, (uint64_t{256} << 10) / un / 256 * 256), 256u << 10,
               std::max<uint64_t>(256, (uint64_t{64} << 10) / un / 256 * 256), 0};
}
Algorithm pick(const TopoSummary& t, CollOp op, uint64_t bytes) {
  Sizes s = sizes_of(t.n);
  s.per_node = static_cast<uint32_t>(std::max(0, t.per_node));
  return choose(op, DataType::f32, bytes, t, s, 8).algorithm;
}
}  // namespace

TEST(CollCostModel, ChoicesOnSyntheticTopologies) {
  const TopoSummary nvlink2{2, 1, 2, LinkClass::nvlink, true, true};
  const TopoSummary switch8{8, 1, 8, LinkClass::nvswitch, true, true};
  const TopoSummary pcie4{4, 1, 4, LinkClass::pcie, true, true};
  const TopoSummary nodes2{8, 2, 4, LinkClass::nvswitch, false, true};
  // 2 GPUs over NVLink
  EXPECT_EQ(pick(nvlink2, CollOp::allreduce, 8), Algorithm::oneshot_ll);
  EXPECT_EQ(pick(nvlink2, CollOp::allreduce, 4096), Algorithm::oneshot_ll);
  // two PEs: one-shot, two-shot and the ring move the same bytes; the tie goes to one-shot
  EXPECT_EQ(pick(nvlink2, CollOp::allreduce, 256u << 20), Algorithm::oneshot);
  EXPECT_EQ(pick(nvlink2, CollOp::allgather, 256u << 20), Algorithm::multiring);
  // 8 GPUs on a switch
  EXPECT_EQ(pick(switch8, CollOp::allreduce, 8), Algorithm::oneshot_ll);
  EXPECT_EQ(pick(switch8, CollOp::allreduce, 32768), Algorithm::oneshot);
  EXPECT_EQ(pick(switch8, CollOp::allreduce, 256u << 20), Algorithm::twoshot);
  // a PCIe tree (every transfer crosses the root): LL only for the smallest sizes, two-shot early
  EXPECT_EQ(pick(pcie4, CollOp::allreduce, 8), Algorithm::oneshot_ll);
  EXPECT_EQ(pick(pcie4, CollOp::allreduce, 4096), Algorithm::oneshot);
  EXPECT_EQ(pick(pcie4, CollOp::allreduce, 32768), Algorithm::twoshot);
  EXPECT_EQ(pick(pcie4, CollOp::allreduce, 256u << 20), Algorithm::twoshot);
  // two nodes: no LL; one-shot for small, hierarchical from 32 KB
  EXPECT_EQ(pick(nodes2, CollOp::allreduce, 8), Algorithm::oneshot);
  EXPECT_EQ(pick(nodes2, CollOp::allreduce, 32768), Algorithm::hierarchical);
  EXPECT_EQ(pick(nodes2, CollOp::allreduce, 256u << 20), Algorithm::hierarchical);
  // the rules in a handle give the same answers as the model
  CollHandle h{};
  fill_auto_rules(h, switch8, sizes_of(8), 8);
  for (uint64_t b : {uint64_t{8}, uint64_t{4096}, uint64_t{1} << 20, uint64_t{256} << 20}) {
    const int r = auto_rule(h, CollOp::allreduce, b);
    EXPECT_EQ(static_cast<Algorithm>(h.auto_algo[static_cast<int>(CollOp::allreduce)][r]),
              pick(switch8, CollOp::allreduce, b))
        << b;
  }
}

TEST(CollNames, ParseWhatTheyPrint) {
  for (int i = 0; i <= static_cast<int>(DataType::last); ++i) {
    DataType t{};
    ASSERT_TRUE(parse_type(type_name(static_cast<DataType>(i)), &t));
    EXPECT_EQ(static_cast<int>(t), i);
  }
  for (int i = 0; i <= static_cast<int>(Algorithm::last); ++i) {
    Algorithm a{};
    ASSERT_TRUE(parse_algorithm(algorithm_name(static_cast<Algorithm>(i)), &a));
    EXPECT_EQ(static_cast<int>(a), i);
  }
  DataType t{};
  EXPECT_TRUE(parse_type("bfloat16", &t));
  EXPECT_EQ(t, DataType::bf16);
  EXPECT_FALSE(parse_type("int8", &t));
}
