// Puts and gets of random sizes and random data, checked by the target and by the origin.
#include <cstdio>
#include <cstring>
#include <vector>

#include "ucx_scenarios.hpp"

namespace ucxtest {

namespace {
constexpr uint64_t kSlot = 256 << 10;  // bytes each sender owns on every target

struct Shape {
  size_t len;
  uint64_t off;  // inside the sender's slot
  uint64_t key;  // of the pattern
};

// Mostly small puts (copied inline), some medium, some past UCX's zero-copy thresholds.
Shape shape(uint64_t seed, int from, int to, int round) {
  uint64_t x = mix(seed, static_cast<uint64_t>(from), static_cast<uint64_t>(to), static_cast<uint64_t>(round));
  uint64_t cls = x % 10, y = mix(x, 1);
  size_t len = cls < 5 ? 1 + y % 64 : cls < 8 ? 65 + y % 8128 : 8193 + y % (kSlot - 8192);
  return {len, (y >> 24) % (kSlot - len + 1), mix(x, 2)};
}

bool all_set(const std::vector<uint64_t>& flags, const std::vector<int>& pes) {
  for (int pe : pes)
    if (load_acquire(&flags[static_cast<size_t>(pe)]) != 1) return false;
  return true;
}
}  // namespace

void scenario_rma(Job& j, int iters, const std::vector<int>& targets, const std::vector<int>& sources) {
  const uint64_t sig_base = kSlot * static_cast<uint64_t>(j.n);
  auto* sig = j.at<uint64_t>(sig_base);
  for (int s = 0; s < j.n; ++s) sig[s] = 0;
  j.barrier();
  const size_t n = static_cast<size_t>(j.n);
  std::vector<std::vector<uint8_t>> out(n), back(n);
  std::vector<uint64_t> put_done(n), sig_done(n), get_done(n);
  for (int r = 1; r <= iters; ++r) {
    // Rounds 3, 6, ... use no completion flags and flush().
    const bool flags = r % 3 != 0;
    for (int t : targets) {
      Shape sh = shape(j.seed, j.me, t, r);
      auto& data = out[static_cast<size_t>(t)];
      data.resize(sh.len);
      fill_pattern(data.data(), sh.len, sh.key);
      put_done[static_cast<size_t>(t)] = sig_done[static_cast<size_t>(t)] = 0;
      j.r().put(t, kSlot * static_cast<uint64_t>(j.me) + sh.off, data.data(), sh.len,
                flags ? Completion{&put_done[static_cast<size_t>(t)]} : Completion{});
      j.r().fence(t);
      j.r().atomic(t, sig_base + 8 * static_cast<uint64_t>(j.me), AtomicOp::set, 8, static_cast<uint64_t>(r), 0,
                   nullptr, flags ? Completion{&sig_done[static_cast<size_t>(t)]} : Completion{});
    }
    if (flags) {
      j.wait([&] { return all_set(put_done, targets) && all_set(sig_done, targets); }, "put and signal completions");
    } else {
      j.r().flush();
    }
    j.wait(
        [&] {
          for (int s : sources)
            if (load_acquire(&sig[s]) < static_cast<uint64_t>(r)) return false;
          return true;
        },
        "the round's signals");
    for (int s : sources) {
      Shape sh = shape(j.seed, s, j.me, r);
      UCX_CHECK(load_acquire(&sig[s]) == static_cast<uint64_t>(r), "round %d: signal from PE %d is %llu", r, s,
                static_cast<unsigned long long>(sig[s]));
      size_t bad = check_pattern(j.at<uint8_t>(kSlot * static_cast<uint64_t>(s) + sh.off), sh.len, sh.key);
      UCX_CHECK(bad == sh.len, "round %d: put of %zu bytes from PE %d wrong at byte %zu", r, sh.len, s, bad);
    }
    // Read back what this PE wrote on each target.
    for (int t : targets) {
      Shape sh = shape(j.seed, j.me, t, r);
      auto& b = back[static_cast<size_t>(t)];
      b.assign(sh.len, 0);
      get_done[static_cast<size_t>(t)] = 0;
      j.r().get(b.data(), t, kSlot * static_cast<uint64_t>(j.me) + sh.off, sh.len,
                Completion{&get_done[static_cast<size_t>(t)]});
    }
    j.wait([&] { return all_set(get_done, targets); }, "gets");
    for (int t : targets) {
      UCX_CHECK(back[static_cast<size_t>(t)] == out[static_cast<size_t>(t)],
                "round %d: get of %zu bytes from PE %d differs", r, out[static_cast<size_t>(t)].size(), t);
    }
    j.barrier();
  }
}

void scenario_rma_all(Job& j, int iters) {
  std::vector<int> all;
  all.reserve(j.n);
  for (int p = 0; p < j.n; ++p) all.push_back(p);
  scenario_rma(j, iters, all, all);
}

// Each PE reaches only its right neighbour: no endpoints to the others, and operations to them
// are refused.
void scenario_ring(Job& j, int iters) {
  const int right = (j.me + 1) % j.n, left = (j.me + j.n - 1) % j.n;
  scenario_rma(j, iters, {right}, {left});
  for (int pe = 0; pe < j.n; ++pe) {
    if (pe == right) continue;
    try {
      uint64_t v = 1;
      j.r().put(pe, 0, &v, 8, {});
      UCX_CHECK(false, "put to unreachable PE %d was accepted", pe);
    } catch (const gpucomm::Error& e) {
      UCX_CHECK(e.code() == gpucomm::Errc::invalid_argument && std::strstr(e.what(), "argument 'pe'"), "%s", e.what());
    }
  }
  j.barrier();
}

}  // namespace ucxtest
