// Messaging scenarios with a fixed shape: every PE exchanges messages of every protocol's sizes
// with every PE (itself included), from private and heap buffers; and message order per source.
#include <algorithm>
#include <iterator>
#include <random>
#include <vector>

#include "msg_pe_common.hpp"

namespace gpucomm::msgtest {

namespace {
// Sizes across every threshold of the default configuration: LL (<= 20), inline eager (<= 24),
// eager in one slot (<= 192) and chunked (<= 2048), rendezvous (staged over several 256 KiB chunks
// for private buffers, by get for heap buffers).
constexpr size_t kSizes[] = {0, 1, 8, 20, 21, 24, 25, 100, 192, 193, 1000, 2048, 2049, 10000, 600000};
}  // namespace

void scenario_exchange(Runtime& rt, const Options& o) {
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  const int me = rt.rank(), n = rt.size();
  const int rounds = static_cast<int>(o.get("--rounds", 2));
  for (int round = 0; round < rounds; ++round) {
    for (bool heap : {false, true}) {
      for (size_t si = 0; si < std::size(kSizes); ++si) {
        const size_t sz = kSizes[si];
        const int tag = static_cast<int>(si);
        std::vector<std::vector<uint8_t>> sbuf(static_cast<size_t>(n)), rbuf(static_cast<size_t>(n));
        char* hsend = heap ? static_cast<char*>(rt.malloc(std::max<size_t>(sz, 1) * static_cast<size_t>(n))) : nullptr;
        std::vector<msg::Request> reqs;
        for (int d = 0; d < n; ++d) {
          void* b = nullptr;
          if (heap) {
            b = hsend + static_cast<size_t>(d) * sz;
          } else {
            sbuf[static_cast<size_t>(d)].resize(sz);
            b = sbuf[static_cast<size_t>(d)].data();
          }
          fill(b, sz, msg_key(me, d, tag, static_cast<uint64_t>(round)));
          reqs.push_back(w.isend(b, sz, d, tag));
        }
        for (int s = 0; s < n; ++s) {
          rbuf[static_cast<size_t>(s)].assign(sz, 0);
          reqs.push_back(w.irecv(rbuf[static_cast<size_t>(s)].data(), sz, s, tag));
        }
        std::vector<msg::Status> st(reqs.size());
        m.waitall(reqs, st);
        for (int s = 0; s < n; ++s) {
          const msg::Status& x = st[static_cast<size_t>(n) + static_cast<size_t>(s)];
          PE_CHECK(x.source == s && x.tag == tag && x.bytes == sz && x.error == 0,
                   "round %d %s size %zu from %d: status source %d tag %d bytes %llu error %d", round,
                   heap ? "heap" : "private", sz, s, x.source, x.tag, static_cast<unsigned long long>(x.bytes),
                   x.error);
          const long long bad =
              first_bad(rbuf[static_cast<size_t>(s)].data(), sz, msg_key(s, me, tag, static_cast<uint64_t>(round)));
          PE_CHECK(bad < 0, "round %d %s size %zu from %d: byte %lld wrong", round, heap ? "heap" : "private", sz, s,
                   bad);
        }
        if (heap) {
          rt.barrier_all();  // every receiver got its data before the buffer goes
          rt.free(hsend);
        }
      }
    }
  }
  rt.barrier_all();
}

// Every PE sends `--count` messages to every PE with tags from a small set and sizes across the
// protocols; receivers take them with ANY_SOURCE/ANY_TAG (or a named source) and check that each
// source's messages arrive in send order (non-overtaking), with every byte.
void scenario_order(Runtime& rt, const Options& o) {
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  const int me = rt.rank(), n = rt.size();
  const int count = static_cast<int>(o.get("--count", 200));
  const uint64_t seed = shared_seed(rt);
  std::mt19937_64 rng(seed + static_cast<uint64_t>(me));
  const size_t max_bytes = 4096;
  // Payload: seq (8 bytes), then the pattern of (src, dst, 0, seq).
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(count) * static_cast<size_t>(n));
  std::vector<msg::Request> sends;
  for (int k = 0; k < count; ++k) {
    for (int d = 0; d < n; ++d) {
      auto& b = out[static_cast<size_t>(k) * static_cast<size_t>(n) + static_cast<size_t>(d)];
      const size_t sz = 8 + rng() % (max_bytes - 8);
      b.resize(sz);
      const uint64_t seq = static_cast<uint64_t>(k);
      std::memcpy(b.data(), &seq, 8);
      fill(b.data() + 8, sz - 8, msg_key(me, d, 0, seq));
      sends.push_back(w.isend(b.data(), sz, d, static_cast<int>(rng() % 3)));
    }
  }
  std::vector<uint64_t> next(static_cast<size_t>(n), 0);
  std::vector<uint8_t> in(max_bytes);
  for (int k = 0; k < count * n; ++k) {
    const bool any = (k % 2) == 0;
    const int src = any ? msg::kAnySource : static_cast<int>(rng() % static_cast<uint64_t>(n));
    if (!any && next[static_cast<size_t>(src)] >= static_cast<uint64_t>(count)) {
      --k;
      continue;  // that source is done; pick another
    }
    const msg::Status st = w.recv(in.data(), in.size(), src, msg::kAnyTag);
    uint64_t seq = 0;
    std::memcpy(&seq, in.data(), 8);
    PE_CHECK(st.source >= 0 && st.source < n, "status source %d", st.source);
    if (st.source < 0 || st.source >= n) continue;
    PE_CHECK(seq == next[static_cast<size_t>(st.source)], "from %d: got message %llu, expected %llu (overtaken)",
             st.source, static_cast<unsigned long long>(seq),
             static_cast<unsigned long long>(next[static_cast<size_t>(st.source)]));
    next[static_cast<size_t>(st.source)] = seq + 1;
    PE_CHECK(first_bad(in.data() + 8, st.bytes - 8, msg_key(st.source, me, 0, seq)) < 0, "from %d message %llu: bytes",
             st.source, static_cast<unsigned long long>(seq));
  }
  m.waitall(sends);
  rt.barrier_all();
}

}  // namespace gpucomm::msgtest
