#pragma once
// How the PEs of a job agree on the unique id when no launcher handed one out:
//  - GPUCOMM_UNIQUE_ID (gpucomm run, or the application) wins;
//  - a job of one PE makes its own;
//  - MPI (GPUCOMM_BOOTSTRAP=mpi, or auto when the application already initialized MPI): rank 0
//    broadcasts the id;
//  - an address (GPUCOMM_BOOTSTRAP_ADDR, or MASTER_ADDR/MASTER_PORT+1): rank 0 binds it and
//    the token is GPUCOMM_BOOTSTRAP_TOKEN or derived from the job's identity;
//  - single-node jobs of mpirun or srun: rank 0 writes the id into a file named after the job
//    id in GPUCOMM_BOOTSTRAP_DIR, the others read it.
#include <string>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/bootstrap/launch_env.hpp"
#include "gpucomm/bootstrap/unique_id.hpp"

namespace gpucomm::bootstrap {

UniqueId rendezvous(const LaunchInfo& info, std::string* how);
// Called once every PE is connected: removes the rendezvous file, if any.
void finish_rendezvous(const LaunchInfo& info, Bootstrap& b);

// MPI part (mpi_rendezvous.cpp; a stub that raises `unsupported` when built without MPI).
bool mpi_available();
bool mpi_already_initialized();
UniqueId mpi_share_unique_id(const LaunchInfo& info);
void mpi_finalize_if_ours();

}  // namespace gpucomm::bootstrap
