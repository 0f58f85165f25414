#pragma once
// Host-launched GPU matching: many independent jobs (one Batch each) uploaded once and matched
// by one kernel launch on a stream. The device functions behind it (match_device.cuh,
// hash_match_device.cuh) can also be called from inside user kernels.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/matching/batch.hpp"
#include "gpucomm/matching/job.hpp"

namespace gpucomm::matching {

enum class Engine {
  mpi,            // MPI-compliant: wildcards, non-overtaking (ballot bit-matrix / direct path)
  no_unexpected,  // MPI-compliant, receives always posted before their messages
  partitioned,    // one job per (communicator, source); no ANY_SOURCE; a warp per job
  hash,           // unordered hash tables; no wildcards; any legal matching
};
const char* engine_name(Engine e);
bool engine_from_name(const std::string& name, Engine* out);

// Which kernel runs the ordered engines: automatic picks the warp kernel (direct path) when
// every job's queues fit kDirectMaxTargets, else the block kernel.
enum class Level { automatic, warp, block };

struct RunOptions {
  Level level = Level::automatic;
  HashStrategy hash = HashStrategy::automatic;
};

// True when a CUDA device can run kernels here.
bool gpu_available();
// Name of the current device ("" without one).
std::string gpu_name();

class DeviceBatchSet {
 public:
  // Uploads the batches (synchronously). Queue capacities leave room for every new entry.
  explicit DeviceBatchSet(const std::vector<Batch>& batches);
  ~DeviceBatchSet();
  DeviceBatchSet(const DeviceBatchSet&) = delete;
  DeviceBatchSet& operator=(const DeviceBatchSet&) = delete;

  size_t size() const;
  // Largest number of targets any job presents to a phase.
  size_t max_targets() const;

  // Enqueues the engine's kernel on `stream`. Throws on a bad launch (not on job status: see
  // download()). Jobs that an engine cannot take are left unchanged with a status bit set.
  void run(Engine e, cudaStream_t stream, const RunOptions& options = {});
  // Puts the uploaded queues back and clears the outputs (for repeated timing).
  void restore(cudaStream_t stream);
  // Waits for the stream and reads every job's outcome; `status` (optional) gets each job's
  // status bits.
  std::vector<Outcome> download(cudaStream_t stream, std::vector<uint32_t>* status = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Text for the error bits of a status word ("" when none).
std::string status_text(uint32_t status);

// Convenience: upload, run, download; raises gpucomm::Error when a job reports an error bit.
std::vector<Outcome> run_on_gpu(Engine e, const std::vector<Batch>& batches, const RunOptions& options = {});
// Partitioned mode for one whole batch: split by (comm, source), match, merge.
Outcome run_partitioned_on_gpu(const Batch& b);

}  // namespace gpucomm::matching
