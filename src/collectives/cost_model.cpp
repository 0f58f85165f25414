// The alpha-beta cost model behind Algorithm::automatic (docs/COLLECTIVES.md, "Selection: the cost
// model"). T = rounds * steps * alpha + bytes on the busiest link / beta + local bytes / gamma.
#include "gpucomm/collectives/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace gpucomm::coll {

namespace {

// The table. The numbers are estimates for H100-class GPUs and x86 hosts; measurements replace them.
constexpr LinkParams kParams[] = {
    {1.5, 300.0, false, 0.8},  // nvlink
    {1.6, 300.0, false, 0.9},  // nvswitch
    {3.0, 20.0, true, 2.0},    // pcie
    {2.0, 5.0, false, 1.5},    // host
    {25.0, 12.0, false, 0.0},  // network
};
constexpr const char* kClassNames[] = {"nvlink", "nvswitch", "pcie", "host", "network"};
constexpr double kGammaGpu = 1000.0, kGammaHost = 10.0;  // local reduce/copy bandwidth, GB/s
constexpr double kChannelSaturation = 8.0;               // channels (CTAs) that fill a GPU's links
constexpr double kPerChannelUs = 0.1;                    // what a channel costs beyond its work
constexpr double kInf = std::numeric_limits<double>::infinity();

double us_for(double bytes, double gbs) {
  return gbs > 0 ? bytes / (gbs * 1e3) : kInf;
}

// Dependent steps of one round.
double steps_of(CollOp op, Algorithm a, int n) {
  const double m = n - 1;
  switch (a) {
    case Algorithm::oneshot:
    case Algorithm::oneshot_ll:
      return 1;
    case Algorithm::twoshot:
      return 2;
    case Algorithm::ring:
    case Algorithm::multiring:
      if (op == CollOp::allreduce) return 2 * m;
      if (op == CollOp::reduce) return m + 1;
      if (op == CollOp::broadcast) return kChainSlots + m - 1;
      return m;
    case Algorithm::hierarchical:
      return 2;  // node-local; the inter-node step is added separately
    case Algorithm::dissemination:
      return std::ceil(std::log2(static_cast<double>(n)));
    default:
      return 1;
  }
}

// Bytes the busiest PE sends (or receives) per `s` bytes of data.
double out_bytes(CollOp op, Algorithm a, int n, double s) {
  const double m = n - 1, frac = m / n;
  switch (a) {
    case Algorithm::oneshot:
      return m * s;
    case Algorithm::oneshot_ll:
      return 2 * m * s;
    case Algorithm::twoshot:
      return 2 * frac * s;
    case Algorithm::ring:
    case Algorithm::multiring:
      if (op == CollOp::allreduce || op == CollOp::reduce) return 2 * frac * s;
      if (op == CollOp::broadcast) return s;
      return m * s;
    default:
      return 0;
  }
}

}  // namespace

const char* link_class_name(LinkClass c) {
  const auto i = static_cast<size_t>(c);
  return i <= static_cast<size_t>(LinkClass::last) ? kClassNames[i] : "?";
}

const LinkParams& link_params(LinkClass c) {
  return kParams[std::min(static_cast<size_t>(c), static_cast<size_t>(LinkClass::last))];
}

double model_us(CollOp op, Algorithm a, DataType dt, uint64_t bytes, uint32_t channels, const TopoSummary& t,
                const Sizes& sizes) {
  if (a == Algorithm::automatic || !implements(a, op) || channels == 0) return kInf;
  const int n = t.n;
  if (n <= 1) return 0.1;
  if (a == Algorithm::ring && channels != 1) return kInf;  // one ring; multiring has one per channel
  if (a == Algorithm::oneshot_ll && (!t.all_direct || t.nodes > 1)) return kInf;
  if (a == Algorithm::hierarchical && (t.nodes < 2 || t.per_node <= 0)) return kInf;
  if (op == CollOp::barrier) {
    const LinkParams& lp = link_params(t.nodes > 1 ? LinkClass::network : t.intra);
    return steps_of(op, a, n) * (a == Algorithm::oneshot_ll ? lp.ll_alpha_us : lp.alpha_us);
  }
  Sizes s = sizes;
  s.per_node = static_cast<uint32_t>(std::max(t.per_node, 0));
  const uint64_t window = window_elems(op, a, dt, s) * type_size(dt);
  if (window == 0) return kInf;
  const double per_channel = std::ceil(static_cast<double>(bytes) / channels);
  const double rounds = std::max(1.0, std::ceil(per_channel / static_cast<double>(window)));
  const double fill = t.gpu ? std::min(1.0, channels / kChannelSaturation) : 1.0;
  // Host PEs run the channels one after the other.
  const double serial = t.gpu ? 1.0 : channels;
  const LinkParams& intra = link_params(t.intra);
  const LinkParams& net = link_params(LinkClass::network);
  const double gamma = (t.gpu ? kGammaGpu : kGammaHost) * fill;
  const double local = reduces(op) ? n * static_cast<double>(bytes) : static_cast<double>(bytes);
  double us = kPerChannelUs * channels + us_for(local, gamma);
  if (a == Algorithm::hierarchical) {
    const double m = t.per_node, k = t.nodes;
    const double sd = static_cast<double>(bytes), acc = static_cast<double>(acc_size(dt)) / type_size(dt);
    us += serial * rounds * (2 * intra.alpha_us + net.alpha_us);
    us += std::max(us_for(2 * (m - 1) / m * sd, intra.beta_gbs * fill), us_for((k - 1) / m * sd * acc, net.beta_gbs));
    return us;
  }
  const bool remote = t.nodes > 1;
  const double alpha = remote ? net.alpha_us : (a == Algorithm::oneshot_ll ? intra.ll_alpha_us : intra.alpha_us);
  us += serial * rounds * steps_of(op, a, n) * alpha;
  double out = out_bytes(op, a, n, static_cast<double>(bytes));
  if (intra.shared && !remote) out *= n;  // every PE's traffic crosses the root
  if (remote) {
    const double far = static_cast<double>(n - std::max(t.per_node, 1)) / (n - 1);
    us += std::max(us_for(out * (1 - far), intra.beta_gbs * fill), us_for(out * far, net.beta_gbs));
  } else {
    us += us_for(out, intra.beta_gbs * fill);
  }
  return us;
}

Estimate best_channels(CollOp op, Algorithm a, DataType dt, uint64_t bytes, const TopoSummary& t, const Sizes& sizes,
                       uint32_t max_channels) {
  Estimate best{a, 1, kInf};
  const uint32_t most = std::max(1u, max_channels);
  for (uint32_t c = 1;; c *= 2) {
    const uint32_t cc = std::min(c, most);
    const double us = model_us(op, a, dt, bytes, cc, t, sizes);
    if (us < best.us) best = Estimate{a, cc, us};
    if (cc == most) break;
  }
  return best;
}

std::vector<Estimate> estimates(CollOp op, DataType dt, uint64_t bytes, const TopoSummary& t, const Sizes& sizes,
                                uint32_t max_channels) {
  std::vector<Estimate> out;
  for (int i = 1; i <= static_cast<int>(Algorithm::last); ++i) {
    const auto a = static_cast<Algorithm>(i);
    if (!implements(a, op)) continue;
    out.push_back(best_channels(op, a, dt, bytes, t, sizes, max_channels));
  }
  // Fastest first; ties go to the earlier algorithm (a stable order keeps every PE's choice equal).
  std::stable_sort(out.begin(), out.end(), [](const Estimate& x, const Estimate& y) { return x.us < y.us; });
  return out;
}

Estimate choose(CollOp op, DataType dt, uint64_t bytes, const TopoSummary& t, const Sizes& sizes,
                uint32_t max_channels) {
  if (op == CollOp::alltoall || op == CollOp::alltoallv) {
    return best_channels(op == CollOp::alltoallv ? CollOp::alltoall : op, Algorithm::oneshot, dt, bytes, t, sizes,
                         max_channels);
  }
  auto e = estimates(op, dt, bytes, t, sizes, max_channels);
  if (e.empty() || !std::isfinite(e.front().us)) return Estimate{Algorithm::oneshot, 1, kInf};
  return e.front();
}

void fill_auto_rules(CollHandle& h, const TopoSummary& t, const Sizes& sizes, uint32_t max_channels) {
  for (int o = 0; o < kNumOps; ++o) {
    const auto op = static_cast<CollOp>(o);
    int rule = 0;
    Estimate cur{};
    for (int k = 0; k <= 34; ++k) {
      const uint64_t bytes = uint64_t{1} << k;
      // The model at one element of the smallest type is what counts for tiny sizes; f32 stands for
      // every type here (the windows scale with the type alike).
      const Estimate e = choose(op, DataType::f32, bytes, t, sizes, max_channels);
      if (k == 0) {
        cur = e;
      } else if (e.algorithm != cur.algorithm || e.channels != cur.channels) {
        if (rule < kAutoRules - 1) {
          h.auto_upto[o][rule] = bytes - 1;
          h.auto_algo[o][rule] = static_cast<uint8_t>(cur.algorithm);
          h.auto_channels[o][rule] = static_cast<uint8_t>(cur.channels);
          ++rule;
        }
        cur = e;
      }
    }
    for (int r = rule; r < kAutoRules; ++r) {
      h.auto_upto[o][r] = UINT64_MAX;
      h.auto_algo[o][r] = static_cast<uint8_t>(cur.algorithm);
      h.auto_channels[o][r] = static_cast<uint8_t>(cur.channels);
    }
  }
}

std::string describe_estimates(const std::vector<Estimate>& e) {
  std::string s;
  for (const auto& x : e) {
    char b[96];
    if (std::isfinite(x.us)) {
      std::snprintf(b, sizeof b, "%s%s %.2f us (%u ch)", s.empty() ? "" : ", ", algorithm_name(x.algorithm), x.us,
                    x.channels);
    } else {
      std::snprintf(b, sizeof b, "%s%s n/a", s.empty() ? "" : ", ", algorithm_name(x.algorithm));
    }
    s += b;
  }
  return s;
}

}  // namespace gpucomm::coll
