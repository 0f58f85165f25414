// Strategies that forward copies: the topology tree (broadcast) and the ring (pipelined
// broadcast, all-gather). A hop copies from an endpoint that already holds the data - the
// source, or a destination filled by an earlier hop - so every destination byte is still
// written exactly once, and later hops depend on the hop that filled their source.
#include <algorithm>
#include <map>

#include "box.hpp"
#include "schedule_build.hpp"

namespace gpucomm::patterns::detail {

Endpoint endpoint_of_region(const GlobalRegion& r, const Fabric& f);

int copy_owner(const GlobalRegion& dst, const GlobalRegion& src) {
  if (dst.place == Place::symmetric) return src.pe;  // a put from wherever the source is
  // A PE's own host or device memory: only that PE writes it, reading what it can read.
  if (src.place == Place::symmetric || src.pe == dst.pe) return dst.pe;
  return -1;
}

Replication replication_of(const GlobalPattern& g, std::string* why) {
  Replication r;
  for (uint32_t i = 0; i < g.transfers.size(); ++i) {
    const GlobalTransfer& t = g.transfers[i];
    if (!t.after.empty()) {
      if (why) *why = "the pattern has dependencies";
      return {};
    }
    auto it = std::find_if(r.groups.begin(), r.groups.end(), [&](const auto& gr) { return gr.src == t.src; });
    if (it == r.groups.end()) {
      r.groups.push_back({t.src, {i}});
    } else {
      it->transfers.push_back(i);
    }
  }
  if (r.groups.empty() && why) *why = "the pattern is empty";
  return r;
}

namespace {

// The endpoints of a group in forwarding order: the source's endpoint first, then the others
// by topological order starting after it (so that the first hops cross between switch groups).
struct Chain {
  Endpoint root;
  std::vector<Endpoint> nodes;                 // nodes[0] == root
  std::vector<std::vector<uint32_t>> members;  // per node: transfers whose destination is there
};

Chain chain_of(const Replication::Group& gr, const GlobalPattern& g, const Fabric& f) {
  Chain c;
  c.root = endpoint_of_region(gr.src, f);
  std::map<int, std::pair<Endpoint, std::vector<uint32_t>>> by_order;
  for (uint32_t t : gr.transfers) {
    const Endpoint e = endpoint_of_region(g.transfers[t].dst, f);
    auto& slot = by_order[f.order(e)];
    slot.first = e;
    slot.second.push_back(t);
  }
  const int root_order = f.order(c.root);
  c.nodes.push_back(c.root);
  c.members.emplace_back();
  if (auto it = by_order.find(root_order); it != by_order.end()) c.members[0] = it->second.second;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [ord, slot] : by_order) {
      if (ord == root_order || (pass == 0) != (ord > root_order)) continue;
      c.nodes.push_back(slot.first);
      c.members.push_back(slot.second);
    }
  }
  return c;
}

// Whether every hop and local copy of the chain has a PE that can execute it.
bool chain_ok(const Chain& c, const Replication::Group& gr, const GlobalPattern& g, std::string* why) {
  auto copyable = [&](const GlobalRegion& dst, const GlobalRegion& src) {
    if (copy_owner(dst, src) >= 0) return true;
    if (why) {
      *why = "no PE can copy between " + std::string(place_name(src.place)) + " memory of rank " +
             std::to_string(src.pe) + " and " + place_name(dst.place) + " memory of rank " + std::to_string(dst.pe);
    }
    return false;
  };
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const GlobalRegion& here = n == 0 ? gr.src : g.transfers[c.members[n][0]].dst;
    for (size_t k = n == 0 ? 0 : 1; k < c.members[n].size(); ++k)  // local copies
      if (!copyable(g.transfers[c.members[n][k]].dst, here)) return false;
    for (size_t m = 0; m < n; ++m)  // hops from any earlier node
      if (!copyable(here, m == 0 ? gr.src : g.transfers[c.members[m][0]].dst)) return false;
  }
  return true;
}

struct Builder {
  const GlobalPattern& g;
  const Fabric& f;
  std::vector<Step> steps;

  uint32_t add(uint32_t transfer, const GlobalRegion& dst, const Box& dbox, const GlobalRegion& src, const Box& sbox,
               uint32_t phase, std::vector<uint32_t> after) {
    Step s;
    s.transfer = transfer;
    s.dst = dst;
    s.dst.box = dbox;
    s.src = src;
    s.src.box = sbox;
    merge_rows(s.dst.box, s.src.box);
    s.owner = copy_owner(s.dst, s.src);
    s.from = endpoint_of_region(src, f);
    s.to = endpoint_of_region(dst, f);
    s.phase = phase;
    s.engine = g.transfers[transfer].engine;
    s.after = std::move(after);
    steps.push_back(std::move(s));
    return static_cast<uint32_t>(steps.size() - 1);
  }
  // The other destinations of a node: local copies from the node's first one.
  void local_copies(const std::vector<uint32_t>& members, uint32_t first_step, const GlobalRegion& node_region,
                    uint32_t phase, size_t start) {
    for (size_t k = start; k < members.size(); ++k) {
      const GlobalTransfer& t = g.transfers[members[k]];
      add(members[k], t.dst, t.dst.box, node_region, node_region.box, phase,
          first_step == UINT32_MAX ? std::vector<uint32_t>{} : std::vector<uint32_t>{first_step});
    }
  }
};

}  // namespace

bool broadcast_shaped(const GlobalPattern& g, const Fabric& f, std::string* why) {
  Replication r = replication_of(g, why);
  if (r.groups.size() != 1) {
    if (why && !r.groups.empty()) *why = "the transfers read " + std::to_string(r.groups.size()) + " different sources";
    return false;
  }
  // (With every destination on the source's endpoint the tree is local copies only.)
  return chain_ok(chain_of(r.groups[0], g, f), r.groups[0], g, why);
}

bool all_gather_shaped(const GlobalPattern& g, const Fabric& f, std::string* why) {
  Replication r = replication_of(g, why);
  if (r.groups.size() < 2) {
    if (why && r.groups.size() == 1) *why = "one source only (a broadcast)";
    return false;
  }
  std::vector<int> roots, set0;
  for (const auto& gr : r.groups) {
    const Chain c = chain_of(gr, g, f);
    if (!chain_ok(c, gr, g, why)) return false;
    std::vector<int> set;
    set.reserve(c.nodes.size());
    for (const Endpoint& e : c.nodes) set.push_back(f.order(e));
    std::sort(set.begin(), set.end());
    if (set0.empty()) set0 = set;
    if (set != set0) {
      if (why) *why = "the sources are not copied to the same endpoints";
      return false;
    }
    roots.push_back(f.order(c.root));
  }
  std::sort(roots.begin(), roots.end());
  if (std::adjacent_find(roots.begin(), roots.end()) != roots.end() || roots.size() != set0.size()) {
    if (why) *why = "not every endpoint is the source of one block";
    return false;
  }
  return true;
}

std::vector<Step> tree_steps(const GlobalPattern& g, const Fabric& f) {
  Replication r = replication_of(g, nullptr);
  const auto& gr = r.groups.at(0);
  const Chain c = chain_of(gr, g, f);
  Builder b{g, f, {}};
  const size_t n = c.nodes.size();
  std::vector<uint32_t> filled(n, UINT32_MAX);  // the step that filled each node
  auto region = [&](size_t node) -> const GlobalRegion& {
    return node == 0 ? gr.src : g.transfers[c.members[node][0]].dst;
  };
  // Recursive halving: the holder of [lo, hi) sends to the middle, then both halves go on.
  struct Range {
    size_t lo, hi;
    uint32_t round;
  };
  std::vector<Range> todo{{0, n, 0}};
  while (!todo.empty()) {
    Range x = todo.back();
    todo.pop_back();
    if (x.hi - x.lo < 2) continue;
    const size_t mid = x.lo + (x.hi - x.lo + 1) / 2;
    const uint32_t t = c.members[mid][0];
    filled[mid] = b.add(t, region(mid), g.transfers[t].dst.box, region(x.lo), region(x.lo).box, x.round,
                        filled[x.lo] == UINT32_MAX ? std::vector<uint32_t>{} : std::vector<uint32_t>{filled[x.lo]});
    todo.push_back({mid, x.hi, x.round + 1});
    todo.push_back({x.lo, mid, x.round + 1});
  }
  b.local_copies(c.members[0], UINT32_MAX, gr.src, 0, 0);
  for (size_t node = 1; node < n; ++node) b.local_copies(c.members[node], filled[node], region(node), 0, 1);
  return std::move(b.steps);
}

std::vector<Step> ring_steps(const GlobalPattern& g, const Fabric& f, uint32_t chunks) {
  Replication r = replication_of(g, nullptr);
  Builder b{g, f, {}};
  if (r.groups.size() == 1) {
    // Broadcast: chunk c travels hop h in phase h + c.
    const auto& gr = r.groups[0];
    const Chain c = chain_of(gr, g, f);
    const size_t n = c.nodes.size();
    const Box& whole = gr.src.box;
    const bool split = chunks > 1 && whole.contiguous();
    const uint64_t total = whole.bytes();
    const uint32_t k = split ? chunks : 1;
    const uint64_t piece = split ? ((total + k - 1) / k + 255) / 256 * 256 : total;
    for (uint32_t ch = 0; ch < k; ++ch) {
      const uint64_t from = uint64_t{ch} * piece;
      if (from >= total) break;
      const uint64_t len = std::min(piece, total - from);
      uint32_t prev = UINT32_MAX;
      for (size_t h = 0; h + 1 < n; ++h) {
        const GlobalRegion& src = h == 0 ? gr.src : g.transfers[c.members[h][0]].dst;
        const uint32_t t = c.members[h + 1][0];
        const GlobalRegion& dst = g.transfers[t].dst;
        const Box sb = split ? sub_range(src.box, from, len) : src.box;
        const Box db = split ? sub_range(dst.box, from, len) : dst.box;
        prev = b.add(t, dst, db, src, sb, static_cast<uint32_t>(h + ch),
                     prev == UINT32_MAX ? std::vector<uint32_t>{} : std::vector<uint32_t>{prev});
      }
    }
    b.local_copies(c.members[0], UINT32_MAX, gr.src, 0, 0);
    for (size_t node = 1; node < n; ++node) {
      // Local copies wait for every chunk of their node: the last chunk's hop depends on the
      // earlier ones only through the previous node, so name them all.
      const GlobalRegion& reg = g.transfers[c.members[node][0]].dst;
      std::vector<uint32_t> arrivals;
      for (uint32_t s = 0; s < b.steps.size(); ++s)
        if (b.steps[s].transfer == c.members[node][0]) arrivals.push_back(s);
      for (size_t m = 1; m < c.members[node].size(); ++m) {
        const GlobalTransfer& t = g.transfers[c.members[node][m]];
        b.add(c.members[node][m], t.dst, t.dst.box, reg, reg.box, 0, arrivals);
      }
    }
    return std::move(b.steps);
  }
  // All-gather: block of the group rooted at ring position p travels hop h in phase h.
  std::vector<Chain> chains;
  chains.reserve(r.groups.size());
  for (const auto& gr : r.groups) chains.push_back(chain_of(gr, g, f));
  std::vector<Endpoint> ring = chains[0].nodes;
  std::sort(ring.begin(), ring.end(), [&](Endpoint a, Endpoint b2) { return f.order(a) < f.order(b2); });
  const size_t n = ring.size();
  auto pos = [&](Endpoint e) {
    for (size_t i = 0; i < n; ++i)
      if (ring[i] == e) return i;
    return n;
  };
  for (size_t gi = 0; gi < r.groups.size(); ++gi) {
    const auto& gr = r.groups[gi];
    const Chain& c = chains[gi];
    std::map<size_t, size_t> node_at;  // ring position -> chain node
    for (size_t node = 0; node < c.nodes.size(); ++node) node_at[pos(c.nodes[node])] = node;
    const size_t root = pos(c.root);
    uint32_t prev = UINT32_MAX;
    const GlobalRegion* src = &gr.src;
    for (size_t h = 0; h + 1 < n; ++h) {
      const size_t node = node_at[(root + h + 1) % n];
      const uint32_t t = c.members[node][0];
      const GlobalRegion& dst = g.transfers[t].dst;
      prev = b.add(t, dst, dst.box, *src, src->box, static_cast<uint32_t>(h),
                   prev == UINT32_MAX ? std::vector<uint32_t>{} : std::vector<uint32_t>{prev});
      b.local_copies(c.members[node], prev, dst, 0, 1);
      src = &dst;
    }
    b.local_copies(c.members[0], UINT32_MAX, gr.src, 0, 0);
  }
  return std::move(b.steps);
}

}  // namespace gpucomm::patterns::detail
