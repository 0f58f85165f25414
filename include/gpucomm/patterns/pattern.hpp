#pragma once
// A Pattern: transfers that may run at the same time, and the dependencies between them.
//
// Every PE of a job may declare a pattern; Pattern::compile (plan.hpp) is then collective: each
// transfer is executed by its `owner` PE (default: the PE that declares it), and the pattern of
// the job is the union of what the owners declare. A PE may also declare transfers of other
// owners (prebuilt patterns declare the whole job's pattern on every PE): those must match what
// their owner declares, which compile checks. Dependencies name transfers of any owner; across
// PEs they become signals.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/patterns/region.hpp"

namespace gpucomm {
class Runtime;
}

namespace gpucomm::patterns {

class Plan;
struct CompileOptions;

// How one transfer moves its bytes (CompileOptions::engine sets the default).
enum class Engine : uint8_t {
  automatic,    // the cost model picks (docs/PATTERNS.md, "Engines")
  copy_engine,  // cudaMemcpyAsync / cudaMemcpy2DAsync / cudaMemcpy3DAsync
  sm_copy,      // a copy kernel of its own
  fused,        // one pack-and-put kernel for every fused transfer of a phase and link
  host_copy,    // the CPU copies (host-memory PEs; host-to-host transfers of GPU PEs)
};
const char* engine_name(Engine e) noexcept;

// What kind of pattern it is: prebuilt patterns know their structure, which some strategies
// need (the topology tree serves broadcasts, the ring broadcasts and all-gathers).
enum class Kind : uint8_t { custom, broadcast, scatter, gather, all_gather, halo };
const char* kind_name(Kind k) noexcept;

using TransferId = uint32_t;

struct TransferOptions {
  int owner = -1;  // the PE that executes it; -1: the declaring PE
  Engine engine = Engine::automatic;
  // For the left-right strategy: +1 moves data "right" (towards higher coordinates), -1 "left",
  // 0 derives it from the PEs. `axis` groups directions (halo exchange: 0 x, 1 y, 2 z).
  int8_t direction = 0;
  int8_t axis = 0;
  std::string label{};  // named in errors and in Plan::describe(); default "transfer #i"
};

struct Transfer {
  Region dst;
  Region src;
  TransferOptions options;
  std::vector<TransferId> after;  // transfers that complete before this one starts
};

class Pattern {
 public:
  Pattern() = default;
  explicit Pattern(std::string name) : name_(std::move(name)) {}

  // Adds a transfer of src's box into dst's box (same width, rows and planes). Raises
  // Errc::invalid_argument naming the transfer for a box outside its buffer, strides that make
  // rows or planes overlap, shapes that differ, or a sealed pattern.
  TransferId add(const Region& dst, const Region& src, TransferOptions options = {});
  // Whole buffers of equal size.
  TransferId add(const Buffer& dst, const Buffer& src, TransferOptions options = {});
  // `bytes` bytes from src_offset to dst_offset.
  TransferId add(const Buffer& dst, size_t dst_offset, const Buffer& src, size_t src_offset, size_t bytes,
                 TransferOptions options = {});
  // `later` starts only after `earlier` completed.
  void depends(TransferId later, TransferId earlier);

  const std::vector<Transfer>& transfers() const { return transfers_; }
  size_t size() const { return transfers_.size(); }
  bool empty() const { return transfers_.empty(); }
  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }
  // Prebuilt patterns are sealed: add and depends raise. editable() returns an unsealed copy of
  // kind `custom` (strategies that need the prebuilt structure no longer apply to it).
  bool sealed() const { return sealed_; }
  Pattern editable() const;
  // The label of transfer `id` ("transfer #id" when none was given).
  std::string label(TransferId id) const;

  // compile(rt, *this, o) (gpucomm/patterns/plan.hpp).
  Plan compile(Runtime& rt) const;
  Plan compile(Runtime& rt, const CompileOptions& o) const;

  // For prebuilt patterns: marks the kind and seals.
  void seal_as(Kind kind);

 private:
  void check_unsealed(const char* call) const;
  std::string name_ = "pattern";
  std::vector<Transfer> transfers_;
  Kind kind_ = Kind::custom;
  bool sealed_ = false;
};

}  // namespace gpucomm::patterns
