// The executor of host-memory PEs: the CPU copies this PE's steps phase by phase, and signals
// and waits at the phase boundaries through the runtime's host signal operations (a release
// store of the epoch into the target's slot; an acquire wait with GPUCOMM_TIMEOUT).
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/model.hpp"
#include "plan_impl.hpp"

namespace gpucomm::patterns::detail {

namespace {

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(const PlanContext& c) : c_(c), program_(sync_program(*c.schedule, c.rank)) {
    by_phase_.resize(c.schedule->phases);
    for (uint32_t i : c.schedule->steps_of(c.rank)) by_phase_[c.schedule->steps[i].phase].push_back(i);
    rebind();
  }

  void launch(Stream stream) override {
    if (stream != nullptr) {
      raise_arg("Plan::launch", "stream", "host-memory PEs run plans on the CPU: pass no stream");
    }
    const uint64_t epoch = ++*c_.host_epoch;
    const uint32_t phases = c_.schedule->phases;
    for (uint32_t b = 0; b <= phases; ++b) {
      boundary(b, epoch);
      if (b == phases) break;
      for (uint32_t i : by_phase_[b]) {
        const Step& s = c_.schedule->steps[i];
        model::copy_box(dst_[i], s.dst.box, src_[i], s.src.box);
      }
    }
  }

  void synchronize() override {}

  void rebind() override {
    const auto& steps = c_.schedule->steps;
    dst_.assign(steps.size(), nullptr);
    src_.assign(steps.size(), nullptr);
    for (uint32_t i : c_.schedule->steps_of(c_.rank)) {
      dst_[i] = c_.address(steps[i].dst);
      src_[i] = c_.address(steps[i].src);
      if (!dst_[i] || !src_[i]) raise(Errc::internal, "Plan", "an unreachable step passed the compile checks");
    }
  }

 private:
  void boundary(uint32_t b, uint64_t epoch) {
    const BoundarySync& sync = program_[b];
    if (sync.empty()) return;
    Runtime& rt = *c_.rt;
    for (const auto& s : sync.signals) rt.signal(c_.sync_block + s.slot, epoch, SignalOp::set, s.pe);
    for (const auto& w : sync.waits) {
      try {
        rt.wait_until<uint64_t>(c_.sync_block + w.slot, Cmp::ge, epoch);
      } catch (const Error& e) {
        raise(e.code(), "Plan::launch",
              c_.name() + ", launch " + std::to_string(epoch) + ": rank " + std::to_string(c_.rank) +
                  " waited at phase boundary " + std::to_string(b) + " for " +
                  explain_slot(*c_.schedule, c_.rank, w.slot) + ": " + e.detail());
      }
    }
  }

  PlanContext c_;
  std::vector<BoundarySync> program_;
  std::vector<std::vector<uint32_t>> by_phase_;
  std::vector<char*> dst_;
  std::vector<const char*> src_;
};

}  // namespace

std::unique_ptr<Executor> make_host_executor(const PlanContext& c) {
  return std::make_unique<HostExecutor>(c);
}

}  // namespace gpucomm::patterns::detail
