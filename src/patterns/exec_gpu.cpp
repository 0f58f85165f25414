// The executor of GPU PEs. Each link (owner, source endpoint, destination endpoint) has a stream.
// A launch forks from the caller's stream into the links of a phase (an event recorded on the
// caller's stream, which each link stream waits for), runs each link's steps - one fused kernel
// for the fused steps, copy-engine copies, host functions for CPU copies and staging - and joins
// back (an event per link stream, which the caller's stream waits for) before the next phase. A
// phase with one link runs on the caller's stream itself. At a boundary with signals, a one-warp
// sync kernel on the caller's stream stores the epoch and waits (kernels.hpp). With
// CompileOptions::graph the same sequence is captured once into a CUDA graph and replayed.
#include <cuda_runtime_api.h>

#include <map>
#include <set>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/patterns/model.hpp"
#include "host_memory.hpp"
#include "kernels.hpp"
#include "plan_impl.hpp"

namespace gpucomm::patterns::detail {

namespace {

void check(cudaError_t e, const char* call, const std::string& what) {
  check_cuda(static_cast<int>(e), call, what);
}

// A CPU copy run as a host function in stream order (host-to-host copies, staging).
struct HostJob {
  char* dst;
  Box dbox;
  const char* src;
  Box sbox;
  static void CUDART_CB run(void* p) {
    auto* j = static_cast<HostJob*>(p);
    model::copy_box(j->dst, j->dbox, j->src, j->sbox);
  }
};

struct Op {
  enum class Kind : uint8_t { copy1d, copy2d, copy3d, fused, host } kind;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t width = 0, rows = 0, dpitch = 0, spitch = 0;
  cudaMemcpy3DParms p3{};
  uint32_t index = 0;  // fused: batch; host: job
};

struct LinkWork {
  uint32_t link = 0;
  std::vector<Op> ops;
};

class GpuExecutor final : public Executor {
 public:
  explicit GpuExecutor(const PlanContext& c) : c_(c) {
    if (!kernels_built()) {
      raise(Errc::unsupported, "patterns::compile",
            "this build of gpucomm has no CUDA kernels (GPUCOMM_ENABLE_CUDA=OFF)");
    }
    check(preload_kernels(), "cudaFuncGetAttributes", "loading the pattern kernels");
    int dev = 0, sms = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice", c_.name());
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute", c_.name());
    max_blocks_ = 4 * sms;
    handle_ = c_.rt->device_handle();
    const Schedule& s = *c_.schedule;
    streams_.assign(s.links_of(c_.rank), nullptr);
    for (auto& st : streams_)
      check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate", c_.name());
    check(cudaStreamCreateWithFlags(&capture_, cudaStreamNonBlocking), "cudaStreamCreate", c_.name());
    make_sync_program();
    rebind();
    graph_ = c_.options->graph;
    if (graph_) capture();
  }

  ~GpuExecutor() override {
    for (cudaStream_t s : pending_) (void)cudaStreamSynchronize(s);
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    for (auto* e : events_) (void)cudaEventDestroy(e);
    for (auto* st : streams_) (void)cudaStreamDestroy(st);
    if (capture_) (void)cudaStreamDestroy(capture_);
    if (sync_ops_) (void)cudaFree(sync_ops_);
    for (void* p : staging_) (void)cudaFreeHost(p);
    (void)cudaGetLastError();
  }

  void launch(Stream stream) override {
    auto st = reinterpret_cast<cudaStream_t>(stream);
    if (graph_) {
      if (dirty_) capture();
      check(cudaGraphLaunch(exec_, st), "cudaGraphLaunch", c_.name());
    } else {
      issue(st);
    }
    for (cudaStream_t p : pending_)
      if (p == st) return;
    pending_.push_back(st);
  }

  void synchronize() override {
    std::vector<cudaStream_t> todo;
    todo.swap(pending_);
    for (cudaStream_t s : todo) {
      const cudaError_t e = cudaStreamSynchronize(s);
      if (e == cudaSuccess) continue;
      try {
        c_.rt->check_device();
      } catch (const Error& err) {
        raise(err.code(), "Plan::synchronize", c_.name() + ": " + explain_failure(err.detail()));
      }
      check(e, "cudaStreamSynchronize", c_.name());
    }
  }

  void rebind() override {
    synchronize();
    prepare();
    dirty_ = true;
  }

  bool uses_graph() const override { return graph_; }

 private:
  // ---- preparation (construction and rebind) ----
  void make_sync_program() {
    const auto program = sync_program(*c_.schedule, c_.rank);
    std::vector<SyncOp> ops;
    for (const BoundarySync& b : program) {
      Boundary x;
      x.first = static_cast<uint32_t>(ops.size());
      for (const auto& s : b.signals) ops.push_back({s.pe, s.slot});
      for (const auto& w : b.waits) ops.push_back({w.pe, w.slot});
      x.signals = static_cast<uint32_t>(b.signals.size());
      x.waits = static_cast<uint32_t>(b.waits.size());
      if (!b.empty() && first_sync_ == UINT32_MAX) first_sync_ = static_cast<uint32_t>(boundaries_.size());
      boundaries_.push_back(x);
    }
    if (ops.empty()) return;
    void* mem = nullptr;
    check(cudaMalloc(&mem, ops.size() * sizeof(SyncOp)), "cudaMalloc", c_.name() + ": sync program");
    sync_ops_ = static_cast<SyncOp*>(mem);
    check(cudaMemcpy(sync_ops_, ops.data(), ops.size() * sizeof(SyncOp), cudaMemcpyHostToDevice), "cudaMemcpy",
          c_.name() + ": sync program");
  }

  std::string who(const Step& s) const {
    const GlobalTransfer& t = c_.pattern->transfers[s.transfer];
    return "transfer #" + std::to_string(s.transfer) + (t.label.empty() ? "" : " ('" + t.label + "')");
  }

  // The address of a host end, pinned (registered), or nullptr when it must be staged.
  char* host_end(const Step& s, const GlobalRegion& r, char* p, bool* staged) {
    *staged = false;
    auto known = pinned_.find(r.address);
    if (known != pinned_.end()) {
      *staged = !known->second;
      return p;
    }
    const HostMemory kind = classify_host(p);
    bool ok = kind != HostMemory::pageable;
    if (!ok) {
      const Pageable policy = c_.options->pageable;
      if (policy == Pageable::refuse) {
        raise_arg(
            "Plan", "pageable",
            c_.name() + ": " + who(s) + ": host memory at " + std::to_string(r.address) +
                " is pageable (CompileOptions::pageable is refuse: pin it with cudaMallocHost or cudaHostRegister)");
      }
      std::string why = "CompileOptions::pageable is stage";
      if (policy == Pageable::register_memory) {
        auto h = pin(p, r.bytes, &why);
        if (h) {
          GPUCOMM_LOG(info, c_.name() << ": registered " << r.bytes << " bytes of pageable host memory for " << who(s));
          pins_.push_back(std::move(h));
          ok = true;
        }
      }
      if (!ok) {
        GPUCOMM_LOG(warn, c_.name() << ": " << who(s) << ": " << r.bytes
                                    << " bytes of pageable host memory are staged through pinned buffers (" << why
                                    << "); pin the buffer (cudaMallocHost, cudaHostRegister) for full speed");
      }
    }
    pinned_[r.address] = ok;
    *staged = !ok;
    return p;
  }

  char* staging(size_t bytes) {
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost", c_.name() + ": staging buffer");
    staging_.push_back(p);
    return static_cast<char*>(p);
  }

  uint32_t host_job(char* dst, const Box& db, const char* src, const Box& sb) {
    jobs_.push_back(std::make_unique<HostJob>(HostJob{dst, db, src, sb}));
    return static_cast<uint32_t>(jobs_.size() - 1);
  }

  // A copy-engine copy of one box pair (both bases are the buffers' first bytes).
  static void copy_engine(std::vector<Op>& ops, char* d, const Box& db, const char* s, const Box& sb) {
    Op op;
    op.dst = d + db.offset;
    op.src = s + sb.offset;
    op.width = db.width;
    if (db.rows == 1 && db.planes == 1) {
      op.kind = Op::Kind::copy1d;
      ops.push_back(op);
      return;
    }
    // One row per plane: planes are the rows.
    const bool rows_are_planes = db.rows == 1;
    const size_t rows = rows_are_planes ? db.planes : db.rows;
    const size_t dp = rows_are_planes ? db.slice_pitch() : db.row_pitch();
    const size_t sp = rows_are_planes ? sb.slice_pitch() : sb.row_pitch();
    if (rows_are_planes || db.planes == 1) {
      op.kind = Op::Kind::copy2d;
      op.rows = rows;
      op.dpitch = dp;
      op.spitch = sp;
      ops.push_back(op);
      return;
    }
    if (db.slice_pitch() % db.row_pitch() == 0 && sb.slice_pitch() % sb.row_pitch() == 0) {
      op.kind = Op::Kind::copy3d;
      op.p3.srcPtr =
          cudaPitchedPtr{const_cast<char*>(s + sb.offset), sb.row_pitch(), sb.width, sb.slice_pitch() / sb.row_pitch()};
      op.p3.dstPtr = cudaPitchedPtr{d + db.offset, db.row_pitch(), db.width, db.slice_pitch() / db.row_pitch()};
      op.p3.extent = cudaExtent{db.width, db.rows, db.planes};
      op.p3.kind = cudaMemcpyDefault;
      ops.push_back(op);
      return;
    }
    for (size_t p = 0; p < db.planes; ++p) {  // plane pitches that are no multiple of the row pitch
      Op q = op;
      q.kind = Op::Kind::copy2d;
      q.dst = d + db.offset + p * db.slice_pitch();
      q.src = s + sb.offset + p * sb.slice_pitch();
      q.rows = db.rows;
      q.dpitch = db.row_pitch();
      q.spitch = sb.row_pitch();
      ops.push_back(q);
    }
  }

  static FusedItem item(char* d, const Box& db, const char* s, const Box& sb) {
    FusedItem it{};
    it.src = s + sb.offset;
    it.dst = d + db.offset;
    it.width = db.width;
    it.rows = db.rows;
    it.planes = db.planes;
    it.src_pitch = sb.row_pitch();
    it.dst_pitch = db.row_pitch();
    it.src_plane_pitch = sb.slice_pitch();
    it.dst_plane_pitch = db.slice_pitch();
    return it;
  }

  // An address kernels can use for a host end (pinned host memory's device mapping).
  char* kernel_address(const Step& s, char* p, bool host_side) {
    if (!host_side) return p;
    void* dp = nullptr;
    if (cudaHostGetDevicePointer(&dp, p, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      raise_arg("Plan", "engine",
                c_.name() + ": " + who(s) + ": engine " + engine_name(s.engine) +
                    " reads or writes host memory that is not pinned and mapped; use copy_engine");
    }
    return static_cast<char*>(dp);
  }

  void prepare() {
    const Schedule& sc = *c_.schedule;
    for (void* p : staging_) (void)cudaFreeHost(p);
    staging_.clear();
    jobs_.clear();
    batches_.clear();
    pinned_.clear();
    std::vector<std::shared_ptr<void>> old_pins;
    old_pins.swap(pins_);  // released after the new ones are taken (shared ranges stay registered)
    phases_.assign(sc.phases, {});
    std::map<std::pair<uint32_t, uint32_t>, size_t> where;  // (phase, link) -> index in phases_
    for (uint32_t i : sc.steps_of(c_.rank)) {
      const Step& s = sc.steps[i];
      auto [it, fresh] = where.emplace(std::pair{s.phase, s.link}, phases_[s.phase].size());
      if (fresh) phases_[s.phase].push_back(LinkWork{s.link, {}});
      std::vector<Op>& ops = phases_[s.phase][it->second].ops;
      char* d = c_.address(s.dst);
      char* src = c_.address(s.src);
      if (!d || !src) raise(Errc::internal, "Plan", "an unreachable step passed the compile checks");
      const bool dst_host = !s.to.device, src_host = !s.from.device;
      switch (s.engine) {
        case Engine::host_copy: {
          Op op;
          op.kind = Op::Kind::host;
          op.index = host_job(d, s.dst.box, src, s.src.box);
          ops.push_back(op);
          break;
        }
        case Engine::copy_engine: {
          bool d_staged = false, s_staged = false;
          if (dst_host) d = host_end(s, s.dst, d, &d_staged);
          if (src_host) src = host_end(s, s.src, src, &s_staged);
          Box db = s.dst.box, sb = s.src.box;
          const Box user_d = db, user_s = sb;
          char* const user_dp = d;
          if (s_staged) {  // CPU copy into pinned memory, then the copy engine
            const Box stage{0, sb.width, sb.rows, sb.planes, sb.row_pitch(), sb.slice_pitch()};
            char* buf = staging(sb.span());
            Op op;
            op.kind = Op::Kind::host;
            op.index = host_job(buf, stage, src, user_s);
            ops.push_back(op);
            src = buf;
            sb = stage;
          }
          char* stage_d = nullptr;
          if (d_staged) {
            db = Box{0, db.width, db.rows, db.planes, db.row_pitch(), db.slice_pitch()};
            stage_d = d = staging(db.span());
          }
          copy_engine(ops, d, db, src, sb);
          if (d_staged) {  // the copy engine into pinned memory, then the CPU copies out
            Op op;
            op.kind = Op::Kind::host;
            op.index = host_job(user_dp, user_d, stage_d, db);
            ops.push_back(op);
          }
          break;
        }
        case Engine::fused:
        case Engine::sm_copy: {
          if (dst_host) d = kernel_address(s, host_end_pinned(s, s.dst, d), true);
          if (src_host) src = kernel_address(s, host_end_pinned(s, s.src, src), true);
          const FusedItem x = item(d, s.dst.box, src, s.src.box);
          // Fused steps of a phase and link share batches; an sm_copy step has its own.
          uint32_t b = UINT32_MAX;
          if (s.engine == Engine::fused) {
            for (const Op& op : ops) {
              if (op.kind == Op::Kind::fused && fused_open_.count(op.index) &&
                  batches_[op.index].count < static_cast<uint32_t>(kMaxFusedItems))
                b = op.index;
            }
          }
          if (b == UINT32_MAX) {
            batches_.push_back(FusedBatch{});
            b = static_cast<uint32_t>(batches_.size() - 1);
            if (s.engine == Engine::fused) fused_open_.insert(b);
            Op op;
            op.kind = Op::Kind::fused;
            op.index = b;
            ops.insert(ops.begin(), op);  // small copies first: they finish early
          }
          add_item(batches_[b], x);
          break;
        }
        case Engine::automatic:
          raise(Errc::internal, "Plan", "a step without an engine");
      }
    }
    fused_open_.clear();
    // Events: a fork per phase, a join per (phase, link) where a phase has several links.
    for (auto* e : events_) (void)cudaEventDestroy(e);
    events_.clear();
    fork_.assign(sc.phases, nullptr);
    join_.assign(sc.phases, {});
    for (uint32_t p = 0; p < sc.phases; ++p) {
      if (phases_[p].size() < 2) continue;
      fork_[p] = event();
      for (size_t l = 0; l < phases_[p].size(); ++l) join_[p].push_back(event());
    }
  }

  char* host_end_pinned(const Step& s, const GlobalRegion& r, char* p) {
    bool staged = false;
    host_end(s, r, p, &staged);
    if (staged) {
      raise_arg("Plan", "engine",
                c_.name() + ": " + who(s) + ": engine " + engine_name(s.engine) +
                    " cannot stage pageable host memory; pin it or use copy_engine");
    }
    return p;
  }

  cudaEvent_t event() {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate", c_.name());
    events_.push_back(e);
    return e;
  }

  // ---- running ----
  void run_ops(const std::vector<Op>& ops, cudaStream_t st) {
    for (const Op& op : ops) {
      switch (op.kind) {
        case Op::Kind::copy1d:
          check(cudaMemcpyAsync(op.dst, op.src, op.width, cudaMemcpyDefault, st), "cudaMemcpyAsync", c_.name());
          break;
        case Op::Kind::copy2d:
          check(cudaMemcpy2DAsync(op.dst, op.dpitch, op.src, op.spitch, op.width, op.rows, cudaMemcpyDefault, st),
                "cudaMemcpy2DAsync", c_.name());
          break;
        case Op::Kind::copy3d:
          check(cudaMemcpy3DAsync(&op.p3, st), "cudaMemcpy3DAsync", c_.name());
          break;
        case Op::Kind::fused:
          check(launch_fused(batches_[op.index], max_blocks_, st), "fused copy kernel", c_.name());
          break;
        case Op::Kind::host:
          check(cudaLaunchHostFunc(st, &HostJob::run, jobs_[op.index].get()), "cudaLaunchHostFunc", c_.name());
          break;
      }
    }
  }

  void issue(cudaStream_t main) {
    const uint32_t phases = c_.schedule->phases;
    for (uint32_t b = 0; b <= phases; ++b) {
      if (b > 0 && phases_[b - 1].size() > 1) {
        const auto& work = phases_[b - 1];
        for (size_t l = 0; l < work.size(); ++l) {
          check(cudaEventRecord(join_[b - 1][l], streams_[work[l].link]), "cudaEventRecord", c_.name());
          check(cudaStreamWaitEvent(main, join_[b - 1][l], 0), "cudaStreamWaitEvent", c_.name());
        }
      }
      const Boundary& x = boundaries_[b];
      if (x.signals + x.waits > 0) {
        check(launch_sync(handle_, sync_ops_ + x.first, x.signals, x.waits, c_.sync_block, c_.device_epoch,
                          b == first_sync_, main),
              "sync kernel", c_.name());
      }
      if (b == phases) break;
      const auto& work = phases_[b];
      if (work.size() == 1) {
        run_ops(work[0].ops, main);
      } else if (work.size() > 1) {
        check(cudaEventRecord(fork_[b], main), "cudaEventRecord", c_.name());
        for (const LinkWork& w : work) {
          check(cudaStreamWaitEvent(streams_[w.link], fork_[b], 0), "cudaStreamWaitEvent", c_.name());
          run_ops(w.ops, streams_[w.link]);
        }
      }
    }
  }

  void capture() {
    cudaGraph_t g = nullptr;
    check(cudaStreamBeginCapture(capture_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture", c_.name());
    try {
      issue(capture_);
    } catch (...) {
      (void)cudaStreamEndCapture(capture_, &g);
      if (g) (void)cudaGraphDestroy(g);
      (void)cudaGetLastError();
      throw;
    }
    check(cudaStreamEndCapture(capture_, &g), "cudaStreamEndCapture", c_.name());
    bool updated = false;
    if (exec_) {
      cudaGraphExecUpdateResultInfo info{};
      updated = cudaGraphExecUpdate(exec_, g, &info) == cudaSuccess;
      if (!updated) {
        (void)cudaGetLastError();
        (void)cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
      }
    }
    if (!updated) {
      const cudaError_t e = cudaGraphInstantiate(&exec_, g, 0);
      (void)cudaGraphDestroy(g);
      check(e, "cudaGraphInstantiate", c_.name());
    } else {
      (void)cudaGraphDestroy(g);
    }
    dirty_ = false;
  }

  // A device wait of this plan failed: name the slot's signal.
  std::string explain_failure(const std::string& detail) const {
    const uint64_t base =
        reinterpret_cast<uintptr_t>(c_.sync_block) - reinterpret_cast<uintptr_t>(c_.rt->heap().base());
    const std::string key = "heap+0x";
    const size_t at = detail.find(key);
    if (!c_.sync_block || at == std::string::npos) return detail;
    const uint64_t off = std::stoull(detail.substr(at + key.size()), nullptr, 16);
    if (off < base || (off - base) % 8 != 0) return detail;
    return "waiting for " + explain_slot(*c_.schedule, c_.rank, static_cast<uint32_t>((off - base) / 8)) + ": " +
           detail;
  }

  struct Boundary {
    uint32_t first = 0, signals = 0, waits = 0;
  };

  PlanContext c_;
  DeviceHandle handle_{};
  int max_blocks_ = 1;
  std::vector<cudaStream_t> streams_;
  cudaStream_t capture_ = nullptr;
  std::vector<std::vector<LinkWork>> phases_;
  std::vector<FusedBatch> batches_;
  std::set<uint32_t> fused_open_;
  std::vector<std::unique_ptr<HostJob>> jobs_;
  std::vector<void*> staging_;
  std::map<uint64_t, bool> pinned_;  // host buffer -> usable directly (pinned or registered)
  std::vector<std::shared_ptr<void>> pins_;
  std::vector<cudaEvent_t> events_, fork_;
  std::vector<std::vector<cudaEvent_t>> join_;
  std::vector<Boundary> boundaries_;
  uint32_t first_sync_ = UINT32_MAX;
  SyncOp* sync_ops_ = nullptr;
  bool graph_ = false, dirty_ = true;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<cudaStream_t> pending_;
};

}  // namespace

std::unique_ptr<Executor> make_gpu_executor(const PlanContext& c) {
  return std::make_unique<GpuExecutor>(c);
}

}  // namespace gpucomm::patterns::detail
