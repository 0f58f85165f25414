#pragma once
// What the pattern tests share: memory images of every (place, PE) space, random patterns over
// them, and a CPU run of a schedule's steps (phase by phase) to compare with the model.
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpucomm/patterns/model.hpp"
#include "gpucomm/patterns/pattern.hpp"
#include "gpucomm/patterns/schedule.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::patterns::testing {

// A runtime of one PE in this process (no launcher): `device` is "host" or "gpu".
inline Runtime* standalone_runtime(const char* device, const char* heap_size) {
  setenv("GPUCOMM_DEVICE", device, 1);
  setenv("GPUCOMM_HEAP_SIZE", heap_size, 1);
  unsetenv("GPUCOMM_UNIQUE_ID");
  unsetenv("GPUCOMM_RANK");
  unsetenv("GPUCOMM_SIZE");
  return new Runtime();
}

// One byte array per (place, pe); regions address them by offset.
struct Images {
  std::map<std::pair<int, int>, std::vector<char>> spaces;

  std::vector<char>& space(Place p, int pe, size_t bytes) {
    auto& v = spaces[{static_cast<int>(p), pe}];
    if (v.size() < bytes) v.resize(bytes);
    return v;
  }
  char* at(const GlobalRegion& r) { return spaces.at({static_cast<int>(r.place), r.pe}).data() + r.address; }
  void fill(uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (auto& [k, v] : spaces)
      for (char& c : v) c = static_cast<char>(rng());
  }
};

// Runs a schedule's steps on the images: phase by phase, and within a phase in an order that
// respects dependencies (there are none inside a phase).
inline void run_schedule(const Schedule& s, Images& img) {
  for (uint32_t ph = 0; ph < s.phases; ++ph) {
    for (const Step& st : s.steps)
      if (st.phase == ph) model::copy_box(img.at(st.dst), st.dst.box, img.at(st.src), st.src.box);
  }
}

inline Box random_box(std::mt19937_64& rng, size_t room, bool strided) {
  auto pick = [&](size_t lo, size_t hi) { return lo + static_cast<size_t>(rng() % (hi - lo + 1)); };
  Box b;
  if (!strided) {
    b.width = pick(1, std::min<size_t>(room / 2, 300));
    b.offset = pick(0, room - b.width);
    return b;
  }
  b.width = pick(1, 24);
  b.rows = pick(1, 6);
  b.planes = pick(1, 3);
  b.pitch = b.width + pick(0, 16);
  b.plane_pitch = b.rows * b.pitch + pick(0, 32);
  const size_t span = b.span();
  if (span > room) return random_box(rng, room, false);
  b.offset = pick(0, room - span);
  return b;
}

// Random transfers between the spaces of `pes` PEs (host memory, device memory where `gpu`,
// symmetric heaps): destinations never overlap and sources never read a destination, except
// along the dependency chains it adds (a transfer reading what an earlier one wrote, after it).
struct RandomPattern {
  GlobalPattern pattern;
  Images images;
};

inline RandomPattern random_pattern(uint64_t seed, int pes, bool gpu, size_t space_bytes = 4096, int transfers = 12,
                                    bool cross_owner_chains = true) {
  std::mt19937_64 rng(seed);
  RandomPattern out;
  out.pattern.name = "random";
  std::vector<Place> places{Place::host, Place::symmetric};
  if (gpu) places.push_back(Place::device);
  for (int pe = 0; pe < pes; ++pe)
    for (Place p : places) out.images.space(p, pe, space_bytes);
  auto overlaps = [&](const GlobalRegion& a, const GlobalRegion& b) {
    if (a.place != b.place || a.pe != b.pe) return false;
    std::vector<char> mark(space_bytes, 0);
    auto paint = [&](const GlobalRegion& r, char v) {
      const size_t rp = r.box.row_pitch(), sp = r.box.slice_pitch();
      bool hit = false;
      for (size_t pl = 0; pl < r.box.planes; ++pl) {
        for (size_t row = 0; row < r.box.rows; ++row) {
          for (size_t x = 0; x < r.box.width; ++x) {
            char& m = mark[r.address + r.box.offset + pl * sp + row * rp + x];
            hit = hit || (m && v == 2);
            m = v;
          }
        }
      }
      return hit;
    };
    paint(a, 1);
    return paint(b, 2);
  };
  for (int attempt = 0; attempt < transfers * 20 && static_cast<int>(out.pattern.transfers.size()) < transfers;
       ++attempt) {
    GlobalTransfer t;
    const bool strided = rng() % 2 == 0;
    t.dst.place = places[rng() % places.size()];
    t.dst.pe = static_cast<int>(rng() % static_cast<uint64_t>(pes));
    t.dst.bytes = space_bytes;
    t.dst.box = random_box(rng, space_bytes, strided);
    const bool chain = !out.pattern.transfers.empty() && rng() % 4 == 0;
    uint32_t dep = 0;
    if (chain) {  // read what an earlier transfer wrote
      dep = static_cast<uint32_t>(rng() % out.pattern.transfers.size());
      t.src = out.pattern.transfers[dep].dst;
      t.dst.box = t.src.box;
      t.dst.box.offset = 0;
      if (t.dst.box.span() > space_bytes) continue;
      t.dst.box.offset = static_cast<size_t>(rng() % (space_bytes - t.dst.box.span() + 1));
      t.after.push_back(dep);
    } else {
      t.src.place = places[rng() % places.size()];
      t.src.pe = static_cast<int>(rng() % static_cast<uint64_t>(pes));
      t.src.bytes = space_bytes;
      t.src.box = t.dst.box;
      t.src.box.offset = 0;
      t.src.box.pitch = t.dst.box.width + rng() % 8;
      t.src.box.plane_pitch = t.src.box.rows * t.src.box.pitch + rng() % 8;
      if (t.src.box.span() > space_bytes) continue;
      t.src.box.offset = static_cast<size_t>(rng() % (space_bytes - t.src.box.span() + 1));
    }
    // Owner: a put when the destination is symmetric, else the PE whose memory it is.
    t.owner = t.dst.place == Place::symmetric ? t.src.pe : t.dst.pe;
    if (t.src.place != Place::symmetric && t.src.pe != t.owner) continue;  // nobody can copy it
    if (chain && !cross_owner_chains && out.pattern.transfers[dep].owner != t.owner) continue;
    bool bad = overlaps(t.dst, t.src);
    for (uint32_t i = 0; i < out.pattern.transfers.size() && !bad; ++i) {
      const GlobalTransfer& o = out.pattern.transfers[i];
      bad = overlaps(o.dst, t.dst) || overlaps(t.dst, o.src) || (!(chain && i == dep) && overlaps(o.dst, t.src));
    }
    if (bad) continue;
    t.label = "random #" + std::to_string(out.pattern.transfers.size());
    out.pattern.transfers.push_back(t);
  }
  return out;
}

// What PE `rank` declares for a job-wide pattern: every transfer (spmd) or only its own. `buffer`
// gives this PE's Buffer of a space (host and device spaces of other PEs: any address).
inline Pattern declare(const GlobalPattern& g, int rank, bool spmd, const std::function<Buffer(Place, int)>& buffer) {
  Pattern p(g.name);
  std::vector<TransferId> id(g.transfers.size(), UINT32_MAX);
  for (uint32_t i = 0; i < g.transfers.size(); ++i) {
    const GlobalTransfer& t = g.transfers[i];
    if (!spmd && t.owner != rank) continue;
    auto region = [&](const GlobalRegion& r) {
      Buffer b = buffer(r.place, r.pe);
      b.bytes = r.bytes;
      return Region{b, r.box};
    };
    TransferOptions o;
    o.owner = t.owner;
    o.engine = t.engine;
    o.label = t.label;
    id[i] = p.add(region(t.dst), region(t.src), o);
    for (uint32_t a : t.after)
      if (id[a] != UINT32_MAX) p.depends(id[i], id[a]);
  }
  return p;
}

}  // namespace gpucomm::patterns::testing
