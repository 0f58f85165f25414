#include <string>

#include "gpucomm/core/error.hpp"
#include "gpucomm/matching/checker.hpp"
#include "gpucomm/matching/engine.hpp"

namespace gpucomm::matching {

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::mpi:
      return "mpi";
    case Engine::no_unexpected:
      return "no_unexpected";
    case Engine::partitioned:
      return "partitioned";
    case Engine::hash:
      return "hash";
  }
  return "?";
}

bool engine_from_name(const std::string& name, Engine* out) {
  for (Engine e : {Engine::mpi, Engine::no_unexpected, Engine::partitioned, Engine::hash}) {
    if (name == engine_name(e)) {
      *out = e;
      return true;
    }
  }
  return false;
}

std::string status_text(uint32_t s) {
  std::string out;
  auto add = [&](uint32_t bit, const char* text) {
    if (!(s & bit)) return;
    if (!out.empty()) out += ", ";
    out += text;
  };
  add(kStatusUmqOverflow, "UMQ overflow");
  add(kStatusPrqOverflow, "PRQ overflow");
  add(kStatusUnexpected, "unexpected message in no-unexpected mode");
  add(kStatusWildcard, "wildcard the engine does not support");
  add(kStatusTooLong, "queue longer than the engine's limit");
  add(kStatusNoTable, "no hash table large enough");
  return out;
}

std::vector<Outcome> run_on_gpu(Engine e, const std::vector<Batch>& batches, const RunOptions& options) {
  DeviceBatchSet set(batches);
  set.run(e, nullptr, options);
  std::vector<uint32_t> status;
  auto out = set.download(nullptr, &status);
  for (size_t i = 0; i < status.size(); ++i) {
    if (status[i] & (kStatusInfo - 1)) {
      raise(Errc::invalid_argument, std::string("matching engine ") + engine_name(e),
            "job " + std::to_string(i) + ": " + status_text(status[i]));
    }
  }
  return out;
}

Outcome run_partitioned_on_gpu(const Batch& b) {
  auto parts = partition_by_source(b);
  std::vector<Batch> batches;
  batches.reserve(parts.size());
  for (auto& p : parts) batches.push_back(std::move(p.batch));
  return merge_partitions(b, run_on_gpu(Engine::partitioned, batches));
}

}  // namespace gpucomm::matching
