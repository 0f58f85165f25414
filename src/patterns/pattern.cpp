#include "gpucomm/patterns/pattern.hpp"

#include "box.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/plan.hpp"

namespace gpucomm::patterns {

const char* engine_name(Engine e) noexcept {
  switch (e) {
    case Engine::automatic:
      return "automatic";
    case Engine::copy_engine:
      return "copy_engine";
    case Engine::sm_copy:
      return "sm_copy";
    case Engine::fused:
      return "fused";
    case Engine::host_copy:
      return "host_copy";
  }
  return "?";
}

const char* kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::custom:
      return "custom";
    case Kind::broadcast:
      return "broadcast";
    case Kind::scatter:
      return "scatter";
    case Kind::gather:
      return "gather";
    case Kind::all_gather:
      return "all_gather";
    case Kind::halo:
      return "halo";
  }
  return "?";
}

void Pattern::check_unsealed(const char* call) const {
  if (sealed_) {
    raise_arg(call, "pattern",
              "'" + name_ + "' is a prebuilt " + kind_name(kind_) +
                  " pattern and cannot be changed; Pattern::editable() returns a copy that can");
  }
}

std::string Pattern::label(TransferId id) const {
  std::string n = "transfer #" + std::to_string(id);
  if (id >= transfers_.size() || transfers_[id].options.label.empty()) return n;
  return n + " ('" + transfers_[id].options.label + "')";
}

TransferId Pattern::add(const Region& dst, const Region& src, TransferOptions options) {
  check_unsealed("Pattern::add");
  const auto id = static_cast<TransferId>(transfers_.size());
  const std::string who =
      "transfer #" + std::to_string(id) + (options.label.empty() ? "" : " ('" + options.label + "')");
  auto check_side = [&](const Region& r, const char* side) {
    if (std::string why = detail::check_box(r.box, r.buffer.bytes); !why.empty())
      raise_arg("Pattern::add", side, who + ": " + side + " box " + why);
    if (r.buffer.place == Place::symmetric && r.buffer.pe < 0)
      raise_arg("Pattern::add", side, who + ": symmetric buffer without a PE");
  };
  check_side(dst, "dst");
  check_side(src, "src");
  if (dst.box.width != src.box.width || dst.box.rows != src.box.rows || dst.box.planes != src.box.planes) {
    raise_arg("Pattern::add", "src",
              who + ": shapes differ: dst " + std::to_string(dst.box.width) + " bytes x " +
                  std::to_string(dst.box.rows) + " rows x " + std::to_string(dst.box.planes) + " planes, src " +
                  std::to_string(src.box.width) + " x " + std::to_string(src.box.rows) + " x " +
                  std::to_string(src.box.planes));
  }
  GPUCOMM_CHECK_ARG(options.owner >= -1, "Pattern::add", "options.owner", who + ": " + std::to_string(options.owner));
  GPUCOMM_CHECK_ARG(options.direction >= -1 && options.direction <= 1, "Pattern::add", "options.direction",
                    who + ": must be -1, 0 or +1");
  transfers_.push_back(Transfer{dst, src, std::move(options), {}});
  return id;
}

TransferId Pattern::add(const Buffer& dst, const Buffer& src, TransferOptions options) {
  if (dst.bytes != src.bytes) {
    check_unsealed("Pattern::add");
    raise_arg("Pattern::add", "src",
              "transfer #" + std::to_string(transfers_.size()) + ": whole buffers of different sizes (dst " +
                  std::to_string(dst.bytes) + " bytes, src " + std::to_string(src.bytes) + ")");
  }
  return add(whole(dst), whole(src), std::move(options));
}

TransferId Pattern::add(const Buffer& dst, size_t dst_offset, const Buffer& src, size_t src_offset, size_t bytes,
                        TransferOptions options) {
  return add(range(dst, dst_offset, bytes), range(src, src_offset, bytes), std::move(options));
}

void Pattern::depends(TransferId later, TransferId earlier) {
  check_unsealed("Pattern::depends");
  const auto n = transfers_.size();
  GPUCOMM_CHECK_ARG(later < n, "Pattern::depends", "later",
                    std::to_string(later) + " is not a transfer of the pattern");
  GPUCOMM_CHECK_ARG(earlier < n, "Pattern::depends", "earlier",
                    std::to_string(earlier) + " is not a transfer of the pattern");
  GPUCOMM_CHECK_ARG(later != earlier, "Pattern::depends", "earlier", label(later) + " cannot depend on itself");
  auto& a = transfers_[later].after;
  for (TransferId e : a)
    if (e == earlier) return;
  a.push_back(earlier);
}

Pattern Pattern::editable() const {
  Pattern p = *this;
  p.sealed_ = false;
  p.kind_ = Kind::custom;
  return p;
}

void Pattern::seal_as(Kind kind) {
  kind_ = kind;
  sealed_ = true;
}

Plan Pattern::compile(Runtime& rt) const {
  return patterns::compile(rt, *this, CompileOptions{});
}

Plan Pattern::compile(Runtime& rt, const CompileOptions& o) const {
  return patterns::compile(rt, *this, o);
}

}  // namespace gpucomm::patterns
