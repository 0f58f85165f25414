// Host time of one launch: a plan against a hand-written loop of cudaMemcpyAsync on the same
// stream structure (one stream; or three links forked from the caller's stream with events and
// joined back, as the plan does), eager and from a CUDA graph.
#include <array>

#include "bench.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace bench {

namespace gp = gpucomm::patterns;

namespace {

constexpr size_t kSmall = 4096;

// N transfers of kSmall bytes, round robin over the directions in `dirs` (0 h2d, 1 d2h, 2 d2d).
struct Setup {
  std::vector<void*> dev, host;
  std::vector<std::array<void*, 2>> pairs;  // dst, src
  std::vector<int> dir;
  Setup(int n, const std::vector<int>& dirs) {
    for (int i = 0; i < n; ++i) {
      const int d = dirs[static_cast<size_t>(i) % dirs.size()];
      void* a = device_alloc(kSmall);
      void* b = d == 2 ? device_alloc(kSmall) : pinned_alloc(kSmall);
      dev.push_back(a);
      (d == 2 ? dev : host).push_back(b);
      pairs.push_back(d == 0 ? std::array<void*, 2>{a, b} : std::array<void*, 2>{b, a});
      dir.push_back(d);
    }
  }
  ~Setup() {
    for (void* p : dev) (void)cudaFree(p);
    for (void* p : host) (void)cudaFreeHost(p);
  }
  gp::Pattern pattern(gp::Engine e) const {
    gp::Pattern p("overhead");
    for (size_t i = 0; i < pairs.size(); ++i) {
      gp::TransferOptions o;
      o.engine = e;
      auto buf = [&](void* ptr, bool on_device) { return on_device ? gp::device(ptr, kSmall) : gp::host(ptr, kSmall); };
      const int d = dir[i];
      p.add(buf(pairs[i][0], d != 1), buf(pairs[i][1], d != 0), o);
    }
    return p;
  }
};

// The hand-written loop: one stream, or fork/join over one stream per direction used.
struct Loop {
  const Setup& s;
  cudaStream_t main;
  std::vector<cudaStream_t> side;
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> join;
  Loop(const Setup& st, cudaStream_t m, int links) : s(st), main(m) {
    if (links < 2) return;
    cuda(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "cudaEventCreate");
    for (int l = 0; l < links; ++l) {
      cudaStream_t x = nullptr;
      cuda(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate");
      side.push_back(x);
      cudaEvent_t e = nullptr;
      cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      join.push_back(e);
    }
  }
  ~Loop() {
    for (auto* x : side) (void)cudaStreamDestroy(x);
    for (auto* e : join) (void)cudaEventDestroy(e);
    if (fork) (void)cudaEventDestroy(fork);
  }
  void run(cudaStream_t m) const {
    if (side.empty()) {
      for (const auto& p : s.pairs) cuda(cudaMemcpyAsync(p[0], p[1], kSmall, cudaMemcpyDefault, m), "cudaMemcpyAsync");
      return;
    }
    cuda(cudaEventRecord(fork, m), "cudaEventRecord");
    for (cudaStream_t x : side) cuda(cudaStreamWaitEvent(x, fork, 0), "cudaStreamWaitEvent");
    for (size_t i = 0; i < s.pairs.size(); ++i) {
      cuda(cudaMemcpyAsync(s.pairs[i][0], s.pairs[i][1], kSmall, cudaMemcpyDefault,
                           side[static_cast<size_t>(s.dir[i]) % side.size()]),
           "cudaMemcpyAsync");
    }
    for (size_t l = 0; l < side.size(); ++l) {
      cuda(cudaEventRecord(join[l], side[l]), "cudaEventRecord");
      cuda(cudaStreamWaitEvent(m, join[l], 0), "cudaStreamWaitEvent");
    }
  }
};

cudaGraphExec_t capture(const std::function<void(cudaStream_t)>& work) {
  cudaStream_t s = nullptr;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  work(s);
  cuda(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture");
  cuda(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
  (void)cudaGraphDestroy(g);
  (void)cudaStreamDestroy(s);
  return exec;
}

}  // namespace

void run_overhead(Context& c) {
  const int trials = c.quick ? 15 : 40;
  struct Case {
    std::string config;
    std::vector<int> dirs;
    gp::Engine engine;
  };
  const std::vector<Case> cases = {
      {"h2d, 1 link", {0}, gp::Engine::copy_engine},
      {"h2d+d2h+d2d, 3 links", {0, 1, 2}, gp::Engine::copy_engine},
      {"d2d, 1 link, fused", {2}, gp::Engine::automatic},
  };
  for (const Case& k : cases) {
    for (int n : {1, 4, 16}) {
      if (k.dirs.size() > static_cast<size_t>(n)) continue;
      c.progress("launch overhead: " + k.config + ", " + std::to_string(n) + " transfer(s)");
      Setup s(n, k.dirs);
      const int batch = std::max(4, 320 / n);
      gp::Plan eager = s.pattern(k.engine).compile(c.rt);
      gp::CompileOptions go;
      go.graph = true;
      gp::Plan graph = s.pattern(k.engine).compile(c.rt, go);
      Loop loop(s, c.stream, static_cast<int>(k.dirs.size()));
      cudaGraphExec_t loop_graph = capture([&](cudaStream_t st) { loop.run(st); });
      auto record = [&](const std::string& name, const std::function<void()>& f) {
        Result r;
        r.section = "overhead";
        r.name = name;
        r.config = k.config;
        r.bytes = kSmall * static_cast<size_t>(n);
        r.transfers = n;
        r.unit = "us";
        r.samples = host_us(c, f, batch, trials);
        c.add(std::move(r));
      };
      const auto st = reinterpret_cast<gpucomm::Stream>(c.stream);
      record("loop", [&] { loop.run(c.stream); });
      record("plan_eager", [&] { eager.launch(st); });
      record("loop_graph", [&] { cuda(cudaGraphLaunch(loop_graph, c.stream), "cudaGraphLaunch"); });
      record("plan_graph", [&] { graph.launch(st); });
      c.sync();
      (void)cudaGraphExecDestroy(loop_graph);
    }
  }
}

}  // namespace bench
