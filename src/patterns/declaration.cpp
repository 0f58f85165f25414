#include "declaration.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gpucomm/core/error.hpp"
#include "host_memory.hpp"

namespace gpucomm::patterns::detail {

namespace {

std::string who(const Pattern& p, size_t i) {
  return p.label(static_cast<TransferId>(i));
}

// A region in the job's terms. Addresses inside the symmetric heap become symmetric regions
// (the same offset on every PE), so that every PE translates them alike.
GlobalRegion translate(const Runtime& rt, const Region& r, int owner, const std::string& what,
                       std::vector<std::string>& errors) {
  GlobalRegion g;
  g.bytes = r.buffer.bytes;
  g.box = r.box;
  const heap::SymmetricHeap& h = const_cast<Runtime&>(rt).heap();
  const bool in_heap = r.buffer.ptr && h.contains(r.buffer.ptr, r.buffer.bytes);
  if (r.buffer.place == Place::symmetric) {
    g.place = Place::symmetric;
    g.pe = r.buffer.pe;
    if (r.buffer.pe >= rt.size()) {
      errors.push_back(what + " is rank " + std::to_string(r.buffer.pe) + "'s symmetric memory; the job has " +
                       std::to_string(rt.size()) + " PEs");
    }
    if (!in_heap) {
      errors.push_back(what + ": " + describe(r.buffer) + " does not lie inside the symmetric heap (allocate it with " +
                       "Runtime::malloc)");
    } else {
      g.address = h.offset_of(r.buffer.ptr);
    }
    return g;
  }
  if (in_heap) {
    g.place = Place::symmetric;
    g.pe = owner;
    g.address = h.offset_of(r.buffer.ptr);
    return g;
  }
  g.place = r.buffer.place;
  g.pe = owner;
  g.address = reinterpret_cast<uintptr_t>(r.buffer.ptr);
  if (owner != rt.rank()) return g;  // another PE's address: only its owner can check it
  if (!r.buffer.ptr) {
    errors.push_back(what + ": " + place_name(r.buffer.place) + " buffer at address 0");
    return g;
  }
  if (rt.pe_kind() == PeKind::host) {
    if (r.buffer.place == Place::device) errors.push_back(what + ": host-memory PEs have no device memory");
    return g;
  }
  if (r.buffer.place == Place::device) {
    cudaPointerAttributes a{};
    const bool ok = cudaPointerGetAttributes(&a, r.buffer.ptr) == cudaSuccess;
    (void)cudaGetLastError();
    if (!ok || (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)) {
      errors.push_back(what + ": " + describe(r.buffer) + " is not device memory (patterns::host() names host memory)");
    } else if (a.type == cudaMemoryTypeDevice && a.device != rt.device_id()) {
      errors.push_back(what + ": " + describe(r.buffer) + " is on GPU " + std::to_string(a.device) +
                       ", which this pattern may not reach: rank " + std::to_string(rt.rank()) + " drives GPU " +
                       std::to_string(rt.device_id()));
    }
  } else if (classify_host(r.buffer.ptr) == HostMemory::device) {
    errors.push_back(what + ": " + describe(r.buffer) + " is device memory (patterns::device() names it)");
  }
  return g;
}

// ---- bytes on the wire ----
constexpr uint32_t kMagic = 0x4e525450;  // "PTRN"
constexpr uint16_t kVersion = 1;

struct Writer {
  std::string out;
  template <class T>
  void put(T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out += s;
  }
  void region(const GlobalRegion& r) {
    put(static_cast<uint8_t>(r.place));
    put(static_cast<int32_t>(r.pe));
    put(r.address);
    put(r.bytes);
    for (size_t v : {r.box.offset, r.box.width, r.box.rows, r.box.planes, r.box.pitch, r.box.plane_pitch})
      put(static_cast<uint64_t>(v));
  }
};

struct Reader {
  const std::string& in;
  size_t at = 0;
  template <class T>
  T get() {
    if (at + sizeof(T) > in.size())
      raise(Errc::protocol, "patterns::compile", "a PE's pattern declaration is truncated");
    T v;
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = get<uint32_t>();
    if (at + n > in.size()) raise(Errc::protocol, "patterns::compile", "a PE's pattern declaration is truncated");
    std::string s = in.substr(at, n);
    at += n;
    return s;
  }
  GlobalRegion region() {
    GlobalRegion r;
    r.place = static_cast<Place>(get<uint8_t>());
    if (static_cast<int>(r.place) > static_cast<int>(Place::symmetric))
      raise(Errc::protocol, "patterns::compile", "a PE's pattern declaration names an unknown place");
    r.pe = get<int32_t>();
    r.address = get<uint64_t>();
    r.bytes = get<uint64_t>();
    r.box.offset = get<uint64_t>();
    r.box.width = get<uint64_t>();
    r.box.rows = get<uint64_t>();
    r.box.planes = get<uint64_t>();
    r.box.pitch = get<uint64_t>();
    r.box.plane_pitch = get<uint64_t>();
    return r;
  }
};

bool same_shape(const GlobalRegion& a, const GlobalRegion& b) {
  return a.place == b.place && a.pe == b.pe && a.bytes == b.bytes && a.box == b.box &&
         (a.place != Place::symmetric || a.address == b.address);
}

}  // namespace

Declaration declare(const Runtime& rt, const Pattern& p, const CompileOptions& o) {
  Declaration d;
  d.rank = rt.rank();
  d.name = p.name();
  d.kind = p.kind();
  d.strategy = o.strategy;
  d.engine = o.engine;
  d.entry_sync = o.entry_sync;
  d.exit_sync = o.exit_sync;
  d.autotune = o.autotune;
  d.chunks = o.chunks;
  d.node = rt.node_id();
  for (size_t i = 0; i < p.size(); ++i) {
    const Transfer& t = p.transfers()[i];
    GlobalTransfer g;
    g.owner = t.options.owner < 0 ? rt.rank() : t.options.owner;
    if (g.owner >= rt.size()) {
      d.errors.push_back(who(p, i) + ": owner " + std::to_string(g.owner) + " is not a PE of the job (" +
                         std::to_string(rt.size()) + " PEs)");
      g.owner = rt.rank();
    }
    g.dst = translate(rt, t.dst, g.owner, who(p, i) + ": dst", d.errors);
    g.src = translate(rt, t.src, g.owner, who(p, i) + ": src", d.errors);
    g.engine = t.options.engine;
    g.direction = t.options.direction;
    g.axis = t.options.axis;
    g.label = t.options.label;
    g.after = t.after;
    d.transfers.push_back(std::move(g));
  }
  return d;
}

std::string encode(const Declaration& d) {
  Writer w;
  w.put(kMagic);
  w.put(kVersion);
  w.put(static_cast<int32_t>(d.rank));
  w.str(d.name);
  w.put(static_cast<uint8_t>(d.kind));
  w.put(static_cast<uint8_t>(d.strategy));
  w.put(static_cast<uint8_t>(d.engine));
  w.put(static_cast<uint8_t>((d.entry_sync ? 1 : 0) | (d.exit_sync ? 2 : 0) | (d.autotune ? 4 : 0)));
  w.put(d.chunks);
  w.put(static_cast<int32_t>(d.node));
  w.put(static_cast<uint8_t>(d.gpu));
  w.str(d.pci_bus_id);
  w.put(static_cast<uint8_t>(d.has_topology));
  if (d.has_topology) {
    const auto& t = d.topology;
    w.str(t.host);
    w.put(static_cast<uint32_t>(t.gpus.size()));
    for (const auto& g : t.gpus) {
      w.str(g.pci_bus_id);
      w.put(static_cast<int32_t>(g.numa_node));
    }
    w.put(static_cast<uint32_t>(t.links.size()));
    for (const auto& l : t.links) {
      w.put(static_cast<int32_t>(l.src));
      w.put(static_cast<int32_t>(l.dst));
      w.put(static_cast<uint8_t>(l.type));
      w.put(static_cast<int32_t>(l.nvlinks));
      w.put(static_cast<uint8_t>(l.peer_access));
      w.str(l.label);
    }
  }
  w.put(static_cast<uint32_t>(d.errors.size()));
  for (const auto& e : d.errors) w.str(e);
  w.put(static_cast<uint32_t>(d.transfers.size()));
  for (const auto& t : d.transfers) {
    w.put(static_cast<int32_t>(t.owner));
    w.region(t.dst);
    w.region(t.src);
    w.put(static_cast<uint8_t>(t.engine));
    w.put(t.direction);
    w.put(t.axis);
    w.str(t.label);
    w.put(static_cast<uint32_t>(t.after.size()));
    for (uint32_t a : t.after) w.put(a);
  }
  return w.out;
}

Declaration decode(const std::string& bytes) {
  Reader r{bytes};
  if (r.get<uint32_t>() != kMagic || r.get<uint16_t>() != kVersion)
    raise(Errc::protocol, "patterns::compile", "a PE sent a pattern declaration of another gpucomm version");
  Declaration d;
  d.rank = r.get<int32_t>();
  d.name = r.str();
  d.kind = static_cast<Kind>(r.get<uint8_t>());
  d.strategy = static_cast<Strategy>(r.get<uint8_t>());
  d.engine = static_cast<Engine>(r.get<uint8_t>());
  const auto flags = r.get<uint8_t>();
  d.entry_sync = flags & 1;
  d.exit_sync = flags & 2;
  d.autotune = flags & 4;
  d.chunks = r.get<uint32_t>();
  d.node = r.get<int32_t>();
  d.gpu = r.get<uint8_t>() != 0;
  d.pci_bus_id = r.str();
  d.has_topology = r.get<uint8_t>() != 0;
  if (d.has_topology) {
    auto& t = d.topology;
    t.host = r.str();
    t.cuda_status = "ok";
    const auto ngpu = r.get<uint32_t>();
    for (uint32_t i = 0; i < ngpu && i < 4096; ++i) {
      topology::Gpu g;
      g.index = static_cast<int>(i);
      g.pci_bus_id = r.str();
      g.numa_node = r.get<int32_t>();
      t.gpus.push_back(g);
    }
    const auto nlinks = r.get<uint32_t>();
    for (uint32_t i = 0; i < nlinks && i < 4096 * 64; ++i) {
      topology::Link l;
      l.src = r.get<int32_t>();
      l.dst = r.get<int32_t>();
      l.type = static_cast<topology::LinkType>(r.get<uint8_t>());
      l.nvlinks = r.get<int32_t>();
      l.peer_access = r.get<uint8_t>() != 0;
      l.label = r.str();
      if (l.src < 0 || l.dst < 0 || l.src >= static_cast<int>(ngpu) || l.dst >= static_cast<int>(ngpu))
        raise(Errc::protocol, "patterns::compile", "a PE's topology names a GPU it does not list");
      t.links.push_back(l);
    }
  }
  const auto nerr = r.get<uint32_t>();
  for (uint32_t i = 0; i < nerr; ++i) d.errors.push_back(r.str());
  const auto n = r.get<uint32_t>();
  for (uint32_t i = 0; i < n; ++i) {
    GlobalTransfer t;
    t.owner = r.get<int32_t>();
    t.dst = r.region();
    t.src = r.region();
    t.engine = static_cast<Engine>(r.get<uint8_t>());
    t.direction = r.get<int8_t>();
    t.axis = r.get<int8_t>();
    t.label = r.str();
    const auto na = r.get<uint32_t>();
    for (uint32_t k = 0; k < na; ++k) {
      const auto a = r.get<uint32_t>();
      if (a >= n) raise(Errc::protocol, "patterns::compile", "a PE's pattern names a dependency it does not declare");
      t.after.push_back(a);
    }
    d.transfers.push_back(std::move(t));
  }
  return d;
}

GlobalPattern single(const Declaration& d) {
  GlobalPattern g;
  g.name = d.name;
  g.kind = d.kind;
  g.transfers = d.transfers;
  return g;
}

GlobalPattern merge(const std::vector<Declaration>& all, std::vector<std::string>* errors) {
  GlobalPattern g;
  const int n = static_cast<int>(all.size());
  const Declaration& r0 = all.at(0);
  g.name = r0.name;
  g.kind = r0.kind;
  for (const Declaration& d : all) {
    if (d.kind != r0.kind) g.kind = Kind::custom;
    if (d.strategy != r0.strategy || d.engine != r0.engine || d.entry_sync != r0.entry_sync ||
        d.exit_sync != r0.exit_sync || d.chunks != r0.chunks || d.autotune != r0.autotune) {
      errors->push_back("rank " + std::to_string(d.rank) + " compiles '" + d.name +
                        "' with other options than rank 0 (" + "strategy " + strategy_name(d.strategy) + " vs " +
                        strategy_name(r0.strategy) + "; engine, sync, chunks and autotune must agree too)");
    }
  }
  // Global ids: each owner's own transfers, owners in rank order.
  std::vector<std::vector<uint32_t>> own(static_cast<size_t>(n));  // owner -> its declaration indices
  std::vector<uint32_t> base(static_cast<size_t>(n) + 1, 0);
  for (int o = 0; o < n; ++o) {
    const auto& ts = all[static_cast<size_t>(o)].transfers;
    for (uint32_t i = 0; i < ts.size(); ++i)
      if (ts[i].owner == o) own[static_cast<size_t>(o)].push_back(i);
    base[static_cast<size_t>(o) + 1] =
        base[static_cast<size_t>(o)] + static_cast<uint32_t>(own[static_cast<size_t>(o)].size());
  }
  for (int o = 0; o < n; ++o)
    for (uint32_t i : own[static_cast<size_t>(o)]) g.transfers.push_back(all[static_cast<size_t>(o)].transfers[i]);
  for (auto& t : g.transfers) t.after.clear();
  // Every declaration: its transfers' global ids, the check against the owner's, the dependencies.
  for (const Declaration& d : all) {
    std::vector<uint32_t> next(static_cast<size_t>(n), 0), gid(d.transfers.size(), UINT32_MAX);
    for (uint32_t i = 0; i < d.transfers.size(); ++i) {
      const GlobalTransfer& t = d.transfers[i];
      if (t.owner < 0 || t.owner >= n) continue;
      const uint32_t k = next[static_cast<size_t>(t.owner)]++;
      if (k >= own[static_cast<size_t>(t.owner)].size()) {
        errors->push_back("rank " + std::to_string(d.rank) + " declares transfer #" + std::to_string(i) + " of rank " +
                          std::to_string(t.owner) + ", which declares only " +
                          std::to_string(own[static_cast<size_t>(t.owner)].size()) + " of its own");
        continue;
      }
      gid[i] = base[static_cast<size_t>(t.owner)] + k;
      const GlobalTransfer& mine = g.transfers[gid[i]];
      if (t.owner != d.rank && (!same_shape(t.dst, mine.dst) || !same_shape(t.src, mine.src) ||
                                t.engine != mine.engine || t.direction != mine.direction || t.axis != mine.axis)) {
        errors->push_back("rank " + std::to_string(d.rank) + " declares transfer #" + std::to_string(i) +
                          " differently from its owner, rank " + std::to_string(t.owner) + " (places, PEs, sizes, " +
                          "boxes and symmetric offsets must match)");
      }
    }
    for (uint32_t i = 0; i < d.transfers.size(); ++i) {
      if (gid[i] == UINT32_MAX) continue;
      auto& after = g.transfers[gid[i]].after;
      for (uint32_t a : d.transfers[i].after) {
        if (gid[a] == UINT32_MAX) continue;
        if (std::find(after.begin(), after.end(), gid[a]) == after.end()) after.push_back(gid[a]);
      }
    }
  }
  return g;
}

}  // namespace gpucomm::patterns::detail
