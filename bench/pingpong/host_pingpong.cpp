#include <algorithm>
#include <chrono>
#include <cstring>

#include "pingpong.hpp"

namespace gpucomm::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Host-memory PEs: put_signal into the partner's heap, wait for its answer on our own word.
std::vector<PingPongResult> host_pingpong(Runtime& rt, const PingPongConfig& cfg) {
  size_t max_bytes = 8;
  for (size_t s : cfg.sizes) max_bytes = std::max(max_bytes, s);
  auto* buf = static_cast<char*>(rt.malloc(max_bytes));
  auto* flag = rt.alloc<uint64_t>(1);
  std::vector<char> src(max_bytes, 'x');
  std::vector<PingPongResult> out;
  uint64_t seq = 0;
  for (int a = 0; a < rt.size(); ++a) {
    for (int b = a + 1; b < rt.size(); ++b) {
      for (size_t bytes : cfg.sizes) {
        *flag = 0;
        seq = 0;
        rt.barrier_all();
        bool in_pair = rt.rank() == a || rt.rank() == b;
        int peer = rt.rank() == a ? b : a;
        PingPongResult r{a, b, bytes, {}, 0};
        for (int s = 0; s < cfg.samples + 1 && in_pair; ++s) {  // the first sample warms up
          auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < cfg.iters; ++i) {
            ++seq;
            if (rt.rank() == a) {
              rt.put_signal(buf, src.data(), bytes, flag, seq, SignalOp::set, peer);
              rt.wait_until<uint64_t>(flag, Cmp::eq, seq);
            } else {
              rt.wait_until<uint64_t>(flag, Cmp::eq, seq);
              rt.put_signal(buf, src.data(), bytes, flag, seq, SignalOp::set, peer);
            }
          }
          double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
          if (s > 0) r.one_way_us.push_back(us / (2.0 * cfg.iters));
        }
        rt.barrier_all();
        if (rt.rank() == a) {
          r.median_us = median(r.one_way_us);
          out.push_back(r);
        }
      }
    }
  }
  rt.free(flag);
  rt.free(buf);
  return out;
}

}  // namespace gpucomm::bench
