#include "gpucomm/matching/oracle.hpp"

namespace gpucomm::matching {
namespace {
// Each probe, in order, takes the earliest unused target `fits(probe, target)` accepts.
// Returns per probe the index of its target or -1; `used` marks the taken targets.
template <class Fits>
std::vector<long> greedy(const std::vector<Envelope>& probes, const std::vector<Envelope>& targets,
                         std::vector<char>& used, Fits fits) {
  std::vector<long> taken(probes.size(), -1);
  used.assign(targets.size(), 0);
  size_t first_unused = 0;  // every target before it is used: only a shortcut
  for (size_t i = 0; i < probes.size(); ++i) {
    while (first_unused < targets.size() && used[first_unused]) ++first_unused;
    for (size_t j = first_unused; j < targets.size(); ++j) {
      if (!used[j] && fits(probes[i], targets[j])) {
        used[j] = 1;
        taken[i] = static_cast<long>(j);
        break;
      }
    }
  }
  return taken;
}
}  // namespace

Outcome match_reference(const Batch& b) {
  Outcome out;
  std::vector<char> used;

  // Phase 1: messages against posted receives.
  auto t1 = greedy(b.msgs, b.prq, used, [](const Envelope& m, const Envelope& r) { return compatible(r, m); });
  for (size_t i = 0; i < b.msgs.size(); ++i)
    if (t1[i] >= 0) out.matches.push_back({b.msgs[i].handle, b.prq[static_cast<size_t>(t1[i])].handle});
  std::vector<Envelope> prq;
  for (size_t j = 0; j < b.prq.size(); ++j)
    if (!used[j]) prq.push_back(b.prq[j]);
  std::vector<Envelope> umq = b.umq;
  for (size_t i = 0; i < b.msgs.size(); ++i)
    if (t1[i] < 0) umq.push_back(b.msgs[i]);

  // Phase 2: receives against the unexpected messages (including this batch's leftovers).
  auto t2 = greedy(b.recvs, umq, used, [](const Envelope& r, const Envelope& m) { return compatible(r, m); });
  for (size_t i = 0; i < b.recvs.size(); ++i)
    if (t2[i] >= 0) out.matches.push_back({umq[static_cast<size_t>(t2[i])].handle, b.recvs[i].handle});
  for (size_t j = 0; j < umq.size(); ++j)
    if (!used[j]) out.umq.push_back(umq[j]);
  for (size_t i = 0; i < b.recvs.size(); ++i)
    if (t2[i] < 0) prq.push_back(b.recvs[i]);
  out.prq = std::move(prq);
  return out;
}

}  // namespace gpucomm::matching
