#include "gpucomm/matching/workload.hpp"

#include <algorithm>
#include <numeric>

namespace gpucomm::matching {
namespace {
int32_t pick(std::mt19937_64& rng, int32_t n) {
  return static_cast<int32_t>(std::uniform_int_distribution<int32_t>(0, n > 0 ? n - 1 : 0)(rng));
}
bool chance(std::mt19937_64& rng, double p) {
  return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p;
}
}  // namespace

Batch random_batch(const WorkloadSpec& s, std::mt19937_64& rng) {
  const Envelope hot{pick(rng, s.comms), pick(rng, s.sources), pick(rng, s.tags), 0};
  auto key = [&](uint32_t handle) {
    if (chance(rng, s.multiplicity)) return Envelope{hot.comm, hot.src, hot.tag, handle};
    return Envelope{pick(rng, s.comms), pick(rng, s.sources), pick(rng, s.tags), handle};
  };
  auto recv = [&](uint32_t handle) {
    Envelope e = key(handle);
    if (chance(rng, s.any_source)) e.src = kAnySource;
    if (chance(rng, s.any_tag)) e.tag = kAnyTag;
    return e;
  };
  Batch b;
  uint32_t h = 0;
  for (uint32_t i = 0; i < s.umq; ++i) b.umq.push_back(key(h++));
  for (uint32_t i = 0; i < s.msgs; ++i) b.msgs.push_back(key(h++));
  h = 0;
  for (uint32_t i = 0; i < s.prq; ++i) b.prq.push_back(recv(h++));
  for (uint32_t i = 0; i < s.recvs; ++i) b.recvs.push_back(recv(h++));
  return b;
}

const char* order_name(Order o) {
  switch (o) {
    case Order::best:
      return "best";
    case Order::average:
      return "average";
    case Order::worst:
      return "worst";
  }
  return "?";
}

Batch paired_batch(uint32_t n, Order order, double multiplicity, bool unexpected, std::mt19937_64& rng) {
  // Distinct keys spread over 64 sources; the hot key is one more source.
  std::vector<Envelope> keys(n);
  for (uint32_t i = 0; i < n; ++i) {
    keys[i] = chance(rng, multiplicity) ? Envelope{0, 64, 7, 0}
                                        : Envelope{0, static_cast<int32_t>(i % 64), static_cast<int32_t>(i / 64), 0};
  }
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  if (order == Order::worst) std::reverse(perm.begin(), perm.end());
  if (order == Order::average) std::shuffle(perm.begin(), perm.end(), rng);
  Batch b;
  auto& waiting = unexpected ? b.umq : b.prq;
  auto& arriving = unexpected ? b.recvs : b.msgs;
  for (uint32_t i = 0; i < n; ++i) waiting.push_back({keys[i].comm, keys[i].src, keys[i].tag, i});
  for (uint32_t i = 0; i < n; ++i) {
    const Envelope& k = keys[perm[i]];
    arriving.push_back({k.comm, k.src, k.tag, n + i});
  }
  return b;
}

}  // namespace gpucomm::matching
