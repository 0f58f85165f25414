// gpucomm-bench-msg: the two-sided messaging layer on one GPU, a PE sending to itself between the
// blocks of one kernel (docs/MESSAGING.md, "Benchmarks"). `gpucomm bench msg` runs it once per
// section (a section that fails cannot take the others with it) and compares with the targets.
// Latencies: CUDA events around a kernel that repeats the round trip, divided by the iterations;
// rates: %globaltimer inside the receiving warp. Each point is the median of several trials after
// a warm-up.
//   floors      flag_rt (device-memory flag between two blocks) and put_signal_rt (one-sided
//               layer), thread / warp / block level, us per round trip
//   pingpong    msg_rt: 8-byte send/recv round trip, receives pre-posted, thread / warp / block
//   unexpected  msg_rt_unexpected: the same, each receive posted only after probe saw the message
//   rendezvous  rndv_us and put_us at 1, 4, 16 MB (one block each side), rndv_overhead_us
//   rate        msg_rate (Mmsg/s, release to last completion) and msg_rate_with_posting, 8 B, 8/32/128
//               sending warps into one receiving warp, modes no_any_source and mpi
//   depth       the rate window (32 sending warps) with D - 768 further receives posted on tags no
//               message uses (half ANY_SOURCE in mode mpi), D = 1024 and 4096: msg_rate_depth
//   endpoints   the same through endpoints (the fast lane; matching state in the owner's shared
//               memory): ep_rt, ep_rt_unexpected (thread / warp / block), ep_rate and
//               ep_rate_with_posting (8/32/128 senders), ep_rate_depth (D = 1024, 4096)
#include <cuda_runtime.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../rma/harness.hpp"
#include "../rma/results.hpp"
#include "ep_kernels.cuh"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/endpoints.hpp"
#include "gpucomm/messaging/messenger.hpp"
#include "msg_kernels.cuh"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

using namespace gpucomm;
using bench::ck;
using bench::Result;
using msg_bench::Fail;
namespace ep = gpucomm::msg::ep;

namespace {

constexpr size_t kMaxRndv = size_t(16) << 20;
constexpr int kRateWindow = 768;
constexpr uint32_t kRingSlots = 256;
// Requests and per-communicator posted receives for the depth section (4096 receives posted, the
// senders' pending sends beside them).
constexpr uint32_t kRequests = 8192;
constexpr int kDepths[] = {1024, 4096};

struct Bench : bench::Harness {
  bool quick;
  msg::Messenger& m;
  msg::Endpoints& eps;
  uint64_t ep_launches = 0;
  msg::CommHandle mpi, nas;  // communicators in mode mpi and no_any_source
  DeviceHandle h;
  int iters;
  uint64_t base = 0;
  uint64_t* flags = nullptr;  // device: flag floor, message lines, go word
  uint64_t* sig = nullptr;    // heap: put_signal words and data
  uint64_t* data = nullptr;
  char* big_src = nullptr;  // heap
  char* big_dst = nullptr;  // heap
  Fail* fail = nullptr;

  Bench(Runtime& r, msg::Messenger& mm, msg::Endpoints& e, const msg::Comm& cm, const msg::Comm& cn, bool q)
      : Harness(r, q ? 5 : 11), quick(q), m(mm), eps(e), mpi(cm.device()), nas(cn.device()), h(r.device_handle()) {
    iters = quick ? 1000 : 5000;
    ck(cudaMalloc(&flags, 256 * sizeof(uint64_t)), "cudaMalloc");
    ck(cudaMemset(flags, 0, 256 * sizeof(uint64_t)), "cudaMemset");
    ck(cudaMalloc(&fail, sizeof(Fail)), "cudaMalloc");
    ck(cudaMemset(fail, 0, sizeof(Fail)), "cudaMemset");
    sig = static_cast<uint64_t*>(rt.calloc(32, sizeof(uint64_t)));
    data = static_cast<uint64_t*>(rt.calloc(64, sizeof(uint64_t)));
  }

  // Raises the messaging layer's record of a failed kernel, or the kernel's own report.
  void check_fail(const std::string& what) {
    Fail f{};
    ck(cudaMemcpy(&f, fail, sizeof f, cudaMemcpyDeviceToHost), "cudaMemcpy");
    ck(cudaMemset(fail, 0, sizeof(Fail)), "cudaMemset");
    if (f.gave_up)
      throw std::runtime_error(what + ": a side saw nothing from the other for 2 s (flag round trip gave up)");
    if (f.bad) {
      throw std::runtime_error(what + ": " + std::to_string(f.bad) + " wrong payload(s) or status(es); first at " +
                               std::to_string(f.first_index) + ": want " + std::to_string(f.first_want) + ", got " +
                               std::to_string(f.first_got));
    }
  }

  // A round-trip latency in us per iteration, launched on two blocks of `threads`.
  template <class Launch>
  void round_trip(const char* name, const char* level, Launch launch) {
    measure(
        {name, level, 8, 2, "us", {}}, 1,
        [&] {
          launch();
          base += static_cast<uint64_t>(iters);
        },
        [&](double ms) { return ms * 1e3 / iters; });
    check_fail(std::string(name) + " (" + level + ")");
  }

  template <class C>
  void floors_at(const char* level, int threads) {
    round_trip("flag_rt", level, [&] { msg_bench::k_flag_rt<C><<<2, threads, 0, s>>>(flags, iters, base, fail); });
    round_trip("put_signal_rt", level,
               [&] { msg_bench::k_put_signal_rt<C><<<2, threads, 0, s>>>(h, data, data + 32, sig, iters, base); });
  }

  void floors() {
    floors_at<coop::Thread>("thread", 32);
    floors_at<coop::Warp>("warp", 32);
    floors_at<coop::Block>("block", 256);
  }

  template <class C>
  void pingpong_at(const char* name, const char* level, int threads, bool unexpected) {
    round_trip(name, level, [&] {
      msg_bench::k_msg_pingpong<C><<<2, threads, 0, s>>>(mpi, flags + 64, iters, base, unexpected, fail);
    });
  }

  void pingpong(bool unexpected) {
    const char* name = unexpected ? "msg_rt_unexpected" : "msg_rt";
    pingpong_at<coop::Thread>(name, "thread", 32, unexpected);
    pingpong_at<coop::Warp>(name, "warp", 32, unexpected);
    pingpong_at<coop::Block>(name, "block", 256, unexpected);
  }

  // Latency breakdown of one group messaging itself: ns per irecv, send and wait, the three sums a
  // kernel leaves in ns[0..2] (launched by `launch(ns)`), divided by the iterations.
  template <class Launch>
  void three_steps(const char* const names[3], const char* level, const std::string& what, Launch launch) {
    unsigned long long* ns = nullptr;
    ck(cudaMalloc(&ns, 3 * sizeof(unsigned long long)), "cudaMalloc");
    Result r[3] = {
        {names[0], level, 8, 1, "ns", {}}, {names[1], level, 8, 1, "ns", {}}, {names[2], level, 8, 1, "ns", {}}};
    for (int t = 0; t <= trials; ++t) {  // trial 0 warms up
      timed(1, [&] { launch(ns); });
      base += static_cast<uint64_t>(iters);
      check_fail(what + " (" + level + ")");
      unsigned long long got[3] = {0, 0, 0};
      ck(cudaMemcpy(got, ns, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (t == 0) continue;
      for (int k = 0; k < 3; ++k) r[k].samples.push_back(static_cast<double>(got[k]) / iters);
    }
    for (auto& x : r) add(std::move(x));
    (void)cudaFree(ns);
  }

  template <class C>
  void steps_at(const char* level, int threads) {
    static const char* const names[3] = {"step_irecv_ns", "step_send_ns", "step_wait_ns"};
    three_steps(names, level, "steps", [&](unsigned long long* ns) {
      msg_bench::k_msg_steps<C><<<1, threads, 0, s>>>(mpi, flags + 64, iters, base, ns, fail);
    });
  }

  void steps() {
    steps_at<coop::Thread>("thread", 32);
    steps_at<coop::Warp>("warp", 32);
    steps_at<coop::Block>("block", 256);
    unsigned long long* ns = nullptr;
    ck(cudaMalloc(&ns, msg_bench::kPieces * sizeof(unsigned long long)), "cudaMalloc");
    std::vector<Result> r;
    r.reserve(msg_bench::kPieces);
    for (int k = 0; k < msg_bench::kPieces; ++k)
      r.push_back(Result{std::string("piece_") + msg_bench::kPieceNames[k], "thread", 8, 1, "ns", {}});
    for (int t = 0; t <= trials; ++t) {
      timed(1, [&] { msg_bench::k_msg_pieces<<<1, 32, 0, s>>>(mpi, flags + 64, 200, ns); });
      unsigned long long got[msg_bench::kPieces] = {};
      ck(cudaMemcpy(got, ns, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (t == 0) continue;
      for (int k = 0; k < msg_bench::kPieces; ++k) r[static_cast<size_t>(k)].samples.push_back(got[k] / 200.0);
    }
    for (auto& x : r) add(std::move(x));
    (void)cudaFree(ns);
  }

  void rendezvous() {
    if (!big_src) {
      big_src = static_cast<char*>(rt.malloc(kMaxRndv));
      big_dst = static_cast<char*>(rt.malloc(kMaxRndv));
    }
    const int reps = quick ? 4 : 16;
    std::vector<unsigned char> pattern(kMaxRndv), back(kMaxRndv);
    for (size_t i = 0; i < kMaxRndv; ++i) pattern[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    ck(cudaMemcpy(big_src, pattern.data(), kMaxRndv, cudaMemcpyHostToDevice), "cudaMemcpy");
    for (size_t mb : {size_t(1), size_t(4), size_t(16)}) {
      const size_t b = mb << 20;
      auto per_msg = [&](double ms) { return ms * 1e3 / reps; };
      Result put{"put_us", "block", b, 1, "us", {}}, rndv{"rndv_us", "block", b, 1, "us", {}};
      Result over{"rndv_overhead_us", "block", b, 1, "us", {}};
      auto put_launch = [&] { msg_bench::k_put_reps<<<1, 512, 0, s>>>(h, big_dst, big_src, b, reps); };
      auto rndv_launch = [&] { msg_bench::k_rendezvous<<<2, 512, 0, s>>>(mpi, big_src, big_dst, b, reps, fail); };
      timed(1, put_launch);  // warm-up
      timed(1, rndv_launch);
      for (int t = 0; t < trials; ++t) {  // interleaved: the overhead is a difference of neighbours
        put.samples.push_back(per_msg(timed(1, put_launch)));
        rndv.samples.push_back(per_msg(timed(1, rndv_launch)));
        over.samples.push_back(rndv.samples.back() - put.samples.back());
      }
      check_fail("rendezvous " + std::to_string(mb) + " MB");
      ck(cudaMemset(big_dst, 0, b), "cudaMemset");
      timed(1, [&] { msg_bench::k_rendezvous<<<2, 512, 0, s>>>(mpi, big_src, big_dst, b, 1, fail); });
      check_fail("rendezvous " + std::to_string(mb) + " MB");
      ck(cudaMemcpy(back.data(), big_dst, b, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (std::memcmp(back.data(), pattern.data(), b) != 0)
        throw std::runtime_error("rendezvous " + std::to_string(mb) + " MB: received bytes differ from the sent ones");
      add(std::move(put));
      add(std::move(rndv));
      add(std::move(over));
    }
  }

  // One rate point: `senders` warps into the receiving warp, `rounds` windows; samples of the rate
  // from the release and with the posting of the receives.
  void rate_point(bool any, int senders, int rounds, Result& del, Result& all, const char* what) {
    const int per = kRateWindow / senders;
    const double msgs = static_cast<double>(senders) * per * rounds;
    for (int t = 0; t <= trials; ++t) {  // trial 0 warms up
      msg_bench::RateArgs a{any ? mpi : nas, senders,   per,         rounds, any ? 1 : 0, rate_sbuf,
                            rate_rbuf,       rate_reqs, flags + 128, base,   rate_ns,     fail};
      timed(1, [&] { msg_bench::k_rate<<<senders + 1, 32, 0, s>>>(a); });
      base += static_cast<uint64_t>(rounds);
      check_fail(what);
      unsigned long long got[2] = {0, 0};
      ck(cudaMemcpy(got, rate_ns, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (t == 0) continue;
      if (got[1] == 0) throw std::runtime_error(std::string(what) + ": the receiver reported no time");
      del.samples.push_back(msgs * 1e3 / static_cast<double>(got[1]));
      all.samples.push_back(msgs * 1e3 / static_cast<double>(got[0] + got[1]));
    }
  }

  uint64_t *rate_sbuf = nullptr, *rate_rbuf = nullptr;
  msg::Request* rate_reqs = nullptr;
  unsigned long long* rate_ns = nullptr;
  void rate_buffers() {
    if (rate_sbuf) return;
    ck(cudaMalloc(&rate_sbuf, size_t(128) * 16 * sizeof(uint64_t)), "cudaMalloc");
    ck(cudaMalloc(&rate_rbuf, 1024 * sizeof(uint64_t)), "cudaMalloc");
    ck(cudaMalloc(&rate_reqs, 1024 * sizeof(msg::Request)), "cudaMalloc");
    ck(cudaMalloc(&rate_ns, 8 * sizeof(unsigned long long)), "cudaMalloc");
  }

  void rate() {
    rate_buffers();
    const int rounds = quick ? 8 : 32;
    for (int any = 0; any < 2; ++any) {
      const char* mode = any ? "mpi" : "no_any_source";
      for (int senders : {8, 32, 128}) {
        Result del{"msg_rate", mode, 8, senders, "Mmsg/s", {}},
            all{"msg_rate_with_posting", mode, 8, senders, "Mmsg/s", {}};
        rate_point(any != 0, senders, rounds, del, all,
                   (std::string("rate ") + mode + " " + std::to_string(senders) + " senders").c_str());
        add(std::move(del));
        add(std::move(all));
      }
    }
  }

  // The rate window (32 sending warps) while D - 768 receives that no message matches are posted.
  void depth() {
    rate_buffers();
    const int rounds = quick ? 8 : 32;
    uint64_t* idle_buf = nullptr;
    msg::Request* idle = nullptr;
    ck(cudaMalloc(&idle_buf, 64), "cudaMalloc");
    ck(cudaMalloc(&idle, 4096 * sizeof(msg::Request)), "cudaMalloc");
    for (int any = 0; any < 2; ++any) {
      const char* mode = any ? "mpi" : "no_any_source";
      for (int d : kDepths) {
        const int extra = d - kRateWindow;
        timed(1, [&] { msg_bench::k_post_idle<<<1, 32, 0, s>>>(any ? mpi : nas, extra, any, 1000, idle_buf, idle); });
        check_fail("depth: posting the idle receives");
        Result del{"msg_rate_depth", mode, 8, d, "Mmsg/s", {}},
            all{"msg_rate_depth_with_posting", mode, 8, d, "Mmsg/s", {}};
        rate_point(any != 0, 32, rounds, del, all, (std::string("depth ") + mode + " " + std::to_string(d)).c_str());
        timed(1, [&] { msg_bench::k_cancel_idle<<<1, 32, 0, s>>>(any ? mpi : nas, extra, idle, fail); });
        check_fail("depth: cancelling the idle receives");
        add(std::move(del));
        add(std::move(all));
      }
    }
    (void)cudaFree(idle);
    (void)cudaFree(idle_buf);
  }

  // ---- endpoints ----

  template <class C>
  void ep_pingpong_at(const char* name, const char* level, int threads, bool unexpected) {
    const ep::EndpointsHandle eh = eps.device();
    round_trip(name, level, [&] {
      msg_bench::k_ep_pingpong<C><<<2, threads, 0, s>>>(eh, flags + 64, iters, base, ++ep_launches, unexpected, fail);
    });
    eps.check_device();
  }

  template <uint32_t kRecvs>
  void ep_rate_point(bool any, int senders, int idle, int rounds, Result& del, Result& all, const std::string& what,
                     Result* per_pass = nullptr, Result* send_ns = nullptr, Result* complete_ns = nullptr) {
    using State = msg_bench::RateState<kRecvs>;
    const size_t smem = sizeof(State);
    ck(cudaFuncSetAttribute(msg_bench::k_ep_rate<kRecvs>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(smem)),
       "cudaFuncSetAttribute");
    const int per = kRateWindow / senders;
    const double msgs = static_cast<double>(senders) * per * rounds;
    for (int t = 0; t <= trials; ++t) {  // trial 0 warms up
      msg_bench::EpRateArgs a{eps.device(), senders,   per,         rounds, any ? 1 : 0, idle,
                              rate_sbuf,    rate_rbuf, flags + 128, base,   rate_ns,     fail};
      timed(1, [&] { msg_bench::k_ep_rate<kRecvs><<<senders + 1, 32, smem, s>>>(a); });
      base += static_cast<uint64_t>(rounds);
      check_fail(what);
      eps.check_device();
      unsigned long long got[6] = {0, 0, 0, 0, 0, 0};
      ck(cudaMemcpy(got, rate_ns, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (t == 0) continue;
      if (got[1] == 0) throw std::runtime_error(what + ": the receiver reported no time");
      if (complete_ns) complete_ns->samples.push_back(static_cast<double>(got[5]) / msgs);
      del.samples.push_back(msgs * 1e3 / static_cast<double>(got[1]));
      all.samples.push_back(msgs * 1e3 / static_cast<double>(got[0] + got[1]));
      if (per_pass && got[2]) per_pass->samples.push_back(static_cast<double>(got[3]) / static_cast<double>(got[2]));
      if (send_ns) send_ns->samples.push_back(static_cast<double>(got[4]) / msgs);
    }
  }

  template <class C>
  void ep_steps_at(const char* level, int threads) {
    static const char* const names[3] = {"ep_step_irecv_ns", "ep_step_send_ns", "ep_step_wait_ns"};
    three_steps(names, level, "endpoint steps", [&](unsigned long long* ns) {
      msg_bench::k_ep_steps<C><<<1, threads, 0, s>>>(eps.device(), flags + 64, iters, ns);
    });
    eps.check_device();
  }

  void endpoints() {
    ep_steps_at<coop::Thread>("thread", 32);
    ep_steps_at<coop::Warp>("warp", 32);
    ep_steps_at<coop::Block>("block", 256);
    ep_pingpong_at<coop::Thread>("ep_rt", "thread", 32, false);
    ep_pingpong_at<coop::Warp>("ep_rt", "warp", 32, false);
    ep_pingpong_at<coop::Block>("ep_rt", "block", 256, false);
    ep_pingpong_at<coop::Thread>("ep_rt_unexpected", "thread", 32, true);
    ep_pingpong_at<coop::Warp>("ep_rt_unexpected", "warp", 32, true);
    ep_pingpong_at<coop::Block>("ep_rt_unexpected", "block", 256, true);
    rate_buffers();
    const int rounds = quick ? 8 : 32;
    for (int any = 0; any < 2; ++any) {
      const char* mode = any ? "mpi" : "no_any_source";
      for (int senders : {8, 32, 128}) {
        Result del{"ep_rate", mode, 8, senders, "Mmsg/s", {}},
            all{"ep_rate_with_posting", mode, 8, senders, "Mmsg/s", {}};
        Result pp{"ep_rate_records_per_pass", mode, 8, senders, "records", {}};
        Result sn{"ep_rate_send_ns", mode, 8, senders, "ns", {}};
        Result cn{"ep_rate_waitall_ns", mode, 8, senders, "ns", {}};
        ep_rate_point<1024>(any != 0, senders, 0, rounds, del, all,
                            std::string("endpoints rate ") + mode + " " + std::to_string(senders) + " senders", &pp,
                            &sn, &cn);
        add(std::move(del));
        add(std::move(all));
        add(std::move(pp));
        add(std::move(sn));
        add(std::move(cn));
      }
      for (int d : kDepths) {
        Result del{"ep_rate_depth", mode, 8, d, "Mmsg/s", {}},
            all{"ep_rate_depth_with_posting", mode, 8, d, "Mmsg/s", {}};
        ep_rate_point<4096>(any != 0, 32, d - kRateWindow, rounds, del, all,
                            std::string("endpoints depth ") + mode + " " + std::to_string(d));
        add(std::move(del));
        add(std::move(all));
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json, cmdline, only;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: gpucomm run -n 1 -- gpucomm-bench-msg [--quick] "
          "[--only floors,pingpong,unexpected,rendezvous,rate,depth,steps,endpoints] [--json FILE]\n"
          "`gpucomm bench msg` runs each section in a process of its own and prints the targets.\n");
      return 0;
    } else {
      std::fprintf(stderr, "gpucomm-bench-msg: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  auto wanted = [&](const char* part) {
    return only.empty() || ("," + only + ",").find(std::string(",") + part + ",") != std::string::npos;
  };
  setenv("GPUCOMM_HEAP_SIZE", "96M", 0);
  setenv("GPUCOMM_TIMEOUT", "10", 0);  // a lost message ends the section in seconds, not minutes
  try {
    Runtime rt;
    if (rt.size() != 1) throw std::runtime_error("run on 1 PE (it messages itself between blocks)");
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("needs a GPU PE (found a host-memory PE)");
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, rt.device_id()), "cudaGetDeviceProperties");
    const std::vector<std::string> devices{std::string(prop.name) + " (GPU " + std::to_string(rt.device_id()) + ")"};
    std::printf("gpucomm-bench-msg: 1 PE on %s%s\n", devices[0].c_str(), quick ? " (quick)" : "");
    // 256 ring slots per sender (the default is 16, set by memory at 1024 PEs): the rate section
    // streams hundreds of messages from one PE into one receiver. Recorded in the JSON.
    msg::MessengerOptions mo{};
    mo.slots = kRingSlots;
    mo.requests = kRequests;
    mo.queue = kRequests;
    msg::Messenger m(rt, mo);
    const msg::Comm cm = m.world();
    const msg::Comm cn = m.world(msg::CommOptions{msg::Mode::no_any_source});
    // Endpoints: 2 per PE, 64-slot rings (the most), 8-byte records (32 bytes a slot).
    msg::Endpoints eps(rt, msg::EndpointsOptions{2, 64, 8});
    Bench b(rt, m, eps, cm, cn, quick);
    try {
      if (wanted("floors")) b.floors();
      if (wanted("pingpong")) b.pingpong(false);
      if (wanted("unexpected")) b.pingpong(true);
      if (wanted("rendezvous")) b.rendezvous();
      if (wanted("steps")) b.steps();
      if (wanted("rate")) b.rate();
      if (wanted("depth")) b.depth();
      if (wanted("endpoints")) b.endpoints();
    } catch (const std::exception&) {
      m.check_device();  // the messaging layer's record names the wait that failed
      eps.check_device();
      throw;
    }
    if (!json.empty() &&
        !bench::write_json(json, "gpucomm-bench-msg", GPUCOMM_GIT_COMMIT, cmdline, devices, quick, b.results, {},
                           "\"pes\": 1, \"ring_slots\": " + std::to_string(kRingSlots) +
                               ", \"requests\": " + std::to_string(kRequests)))
      throw std::runtime_error("cannot write " + json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-msg: %s\n", e.what());
    return 1;
  }
  return 0;
}
