#pragma once
// Detects how this process was started (gpucomm run, mpirun, srun, torchrun, or alone) and
// what that tells about its rank, the job size, its node-local rank and where to rendezvous.
#include <optional>
#include <string>

namespace gpucomm::bootstrap {

struct LaunchInfo {
  std::string launcher;  // "gpucomm", "openmpi", "pmi", "slurm", "torchrun", "singleton"
  int rank = 0;
  int size = 1;
  int local_rank = 0;      // -1 if the launcher does not say
  int local_size = 1;      // -1 if the launcher does not say
  std::string unique_id;   // GPUCOMM_UNIQUE_ID, if given
  std::string store_addr;  // HOST:PORT from GPUCOMM_BOOTSTRAP_ADDR or MASTER_ADDR/MASTER_PORT+1
  std::string job_id;      // for the file rendezvous of single-node jobs
  std::string token_seed;  // job identity from which a token is derived when none is given
  bool single_node() const { return local_size == size && size > 0; }
};

// Reads the environment; raises invalid_argument naming the variable on inconsistent values.
LaunchInfo detect_launch();

}  // namespace gpucomm::bootstrap
