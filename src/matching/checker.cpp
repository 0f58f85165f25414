#include "gpucomm/matching/checker.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "gpucomm/core/error.hpp"

namespace gpucomm::matching {
namespace {
struct Entry {
  Envelope env;
  bool is_new;
  bool used = false;
};
using Key = std::tuple<int32_t, int32_t, int32_t>;

std::string env_text(const Envelope& e) {
  std::ostringstream os;
  os << "(" << e.comm << "," << e.src << "," << e.tag << " #" << e.handle << ")";
  return os.str();
}

// Handle -> entry, complaining about duplicates.
bool index(const std::vector<Envelope>& old_q, const std::vector<Envelope>& new_q, const char* what,
           std::unordered_map<uint32_t, Entry>& out, std::string& err) {
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& e : pass ? new_q : old_q) {
      if (!out.emplace(e.handle, Entry{e, pass == 1}).second) {
        err = std::string("batch has two ") + what + " with handle #" + std::to_string(e.handle);
        return false;
      }
    }
  }
  return true;
}

std::string check_rest(const std::vector<Envelope>& q, std::unordered_map<uint32_t, Entry>& all, const char* name) {
  size_t expected = 0;
  for (auto& [h, e] : all) expected += e.used ? 0 : 1;
  if (q.size() != expected) {
    return std::string(name) + " holds " + std::to_string(q.size()) + " entries, " + std::to_string(expected) +
           " are unmatched";
  }
  std::unordered_map<uint32_t, int> seen;
  for (const auto& e : q) {
    auto it = all.find(e.handle);
    if (it == all.end() || it->second.used || !same_key(it->second.env, e) || seen[e.handle]++)
      return std::string(name) + " entry " + env_text(e) + " is not an unmatched entry of the batch (or repeats)";
  }
  return {};
}
}  // namespace

std::string check_legal_matching(const Batch& b, const Outcome& out) {
  std::unordered_map<uint32_t, Entry> msgs, recvs;
  std::string err;
  if (!index(b.umq, b.msgs, "messages", msgs, err) || !index(b.prq, b.recvs, "receives", recvs, err)) return err;
  for (size_t i = 0; i < out.matches.size(); ++i) {
    const Match& m = out.matches[i];
    auto mi = msgs.find(m.msg);
    auto ri = recvs.find(m.recv);
    std::string where =
        "match " + std::to_string(i) + " (msg #" + std::to_string(m.msg) + ", recv #" + std::to_string(m.recv) + "): ";
    if (mi == msgs.end() || ri == recvs.end()) return where + "unknown handle";
    if (mi->second.used) return where + "message used twice";
    if (ri->second.used) return where + "receive used twice";
    if (!compatible(ri->second.env, mi->second.env))
      return where + "envelopes " + env_text(mi->second.env) + " and " + env_text(ri->second.env) + " do not match";
    if (!mi->second.is_new && !ri->second.is_new) return where + "pairs an old message with an old receive";
    mi->second.used = ri->second.used = true;
  }
  if (err = check_rest(out.umq, msgs, "UMQ"); !err.empty()) return err;
  if (err = check_rest(out.prq, recvs, "PRQ"); !err.empty()) return err;

  // Maximality: index unmatched receives by their key (wildcards kept as -1).
  std::map<Key, std::pair<size_t, size_t>> open;  // key -> (receives, new receives)
  for (const auto& [h, r] : recvs) {
    if (r.used) continue;
    auto& c = open[{r.env.comm, r.env.src, r.env.tag}];
    ++c.first;
    c.second += r.is_new ? 1 : 0;
  }
  for (const auto& [h, m] : msgs) {
    if (m.used) continue;
    const Envelope& e = m.env;
    for (Key k : {Key{e.comm, e.src, e.tag}, Key{e.comm, kAnySource, e.tag}, Key{e.comm, e.src, kAnyTag},
                  Key{e.comm, kAnySource, kAnyTag}}) {
      auto it = open.find(k);
      if (it == open.end()) continue;
      if (m.is_new ? it->second.first > 0 : it->second.second > 0) {
        return "not maximal: unmatched message " + env_text(e) + " fits an unmatched receive (" +
               std::to_string(std::get<0>(k)) + "," + std::to_string(std::get<1>(k)) + "," +
               std::to_string(std::get<2>(k)) + ")";
      }
    }
  }
  return {};
}

std::vector<Partition> partition_by_source(const Batch& b) {
  std::map<std::pair<int32_t, int32_t>, size_t> where;
  std::vector<Partition> parts;
  auto part = [&](const Envelope& e) -> Batch& {
    if (e.src == kAnySource)
      raise_arg("partition_by_source", "batch", "receive #" + std::to_string(e.handle) + " uses ANY_SOURCE");
    auto [it, fresh] = where.emplace(std::make_pair(e.comm, e.src), parts.size());
    if (fresh) parts.push_back({e.comm, e.src, {}});
    return parts[it->second].batch;
  };
  for (const auto& e : b.umq) part(e).umq.push_back(e);
  for (const auto& e : b.prq) part(e).prq.push_back(e);
  for (const auto& e : b.msgs) part(e).msgs.push_back(e);
  for (const auto& e : b.recvs) part(e).recvs.push_back(e);
  return parts;
}

Outcome merge_partitions(const Batch& whole, const std::vector<Outcome>& parts) {
  // Global rank of each entry by handle: old queue first, then the batch's new entries.
  std::unordered_map<uint32_t, size_t> msg_rank, recv_rank;
  for (size_t i = 0; i < whole.umq.size(); ++i) msg_rank[whole.umq[i].handle] = i;
  for (size_t i = 0; i < whole.msgs.size(); ++i) msg_rank[whole.msgs[i].handle] = whole.umq.size() + i;
  for (size_t i = 0; i < whole.prq.size(); ++i) recv_rank[whole.prq[i].handle] = i;
  for (size_t i = 0; i < whole.recvs.size(); ++i) recv_rank[whole.recvs[i].handle] = whole.prq.size() + i;
  const size_t old_prq = whole.prq.size();

  std::vector<std::pair<size_t, Match>> phase1, phase2;
  std::vector<std::pair<size_t, Envelope>> umq, prq;
  for (const auto& p : parts) {
    for (const auto& m : p.matches) {
      size_t rr = recv_rank.at(m.recv);
      if (rr < old_prq) {
        phase1.push_back({msg_rank.at(m.msg), m});
      } else {
        phase2.push_back({rr, m});
      }
    }
    for (const auto& e : p.umq) umq.push_back({msg_rank.at(e.handle), e});
    for (const auto& e : p.prq) prq.push_back({recv_rank.at(e.handle), e});
  }
  auto by_rank = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::sort(phase1.begin(), phase1.end(), by_rank);
  std::sort(phase2.begin(), phase2.end(), by_rank);
  std::sort(umq.begin(), umq.end(), by_rank);
  std::sort(prq.begin(), prq.end(), by_rank);
  Outcome out;
  for (auto& x : phase1) out.matches.push_back(x.second);
  for (auto& x : phase2) out.matches.push_back(x.second);
  for (auto& x : umq) out.umq.push_back(x.second);
  for (auto& x : prq) out.prq.push_back(x.second);
  return out;
}

}  // namespace gpucomm::matching
