#pragma once
// What a CPU proxy thread runs descriptors with. One executor per proxy thread, used only by that
// thread. An executor completes entries late: start() issues the work, and `done` is set (release)
// once the entry is complete - its data AND its signal visible at the target, its result written -
// possibly from a later progress() call. Entries of one queue to one PE are performed in order.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/core/error.hpp"
#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

// A descriptor that cannot be executed: which fault, which field, and the details.
class DescriptorFault : public Error {
 public:
  DescriptorFault(QueueFault f, Field field, const std::string& detail)
      : Error(f == QueueFault::transport ? Errc::peer_failure : Errc::invalid_argument, "proxy", detail),
        fault_(f),
        field_(field) {}
  QueueFault fault() const { return fault_; }
  Field field() const { return field_; }

 private:
  QueueFault fault_;
  Field field_;
};

// check_descriptor() (gpucomm/proxy/check.hpp) with a text: throws DescriptorFault.
void validate(const Descriptor& d, const HeapGeometry& g);

inline void set_done(uint64_t* done) {
  __atomic_store_n(done, uint64_t(1), __ATOMIC_RELEASE);
}

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;
  // Issues `d` (already validated). Throws DescriptorFault when the path cannot perform it.
  virtual void start(const Descriptor& d, uint64_t* done) = 0;
  // Called after each round of start() calls: an executor may batch its completion tracking.
  virtual void flush() {}
  // Advances outstanding work; sets the `done` words of what completed.
  virtual void progress() {}
  // Whether the executor has work outstanding (the agent keeps progressing it).
  virtual bool busy() const { return false; }
  // Whether the executor must be progressed even when idle (a network target side).
  virtual bool needs_idle_progress() const { return false; }
};

// Routes each descriptor by its PE to one of several executors (host copies, copy engine, UCX).
class RoutingExecutor final : public Executor {
 public:
  // `route[pe]` indexes `paths`; -1: unreachable (start() faults).
  RoutingExecutor(std::vector<std::unique_ptr<Executor>> paths, std::vector<int> route);
  const char* name() const override { return "routing"; }
  void start(const Descriptor& d, uint64_t* done) override;
  void flush() override;
  void progress() override;
  bool busy() const override;
  bool needs_idle_progress() const override;

 private:
  std::vector<std::unique_ptr<Executor>> paths_;
  std::vector<int> route_;
};

}  // namespace gpucomm::proxy
