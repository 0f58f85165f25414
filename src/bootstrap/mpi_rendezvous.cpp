#include <cstring>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "rendezvous.hpp"

#ifdef GPUCOMM_HAVE_MPI
#include <mpi.h>
#endif

namespace gpucomm::bootstrap {

#ifdef GPUCOMM_HAVE_MPI
namespace {
bool g_initialized_here = false;
}

bool mpi_available() {
  return true;
}

bool mpi_already_initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

UniqueId mpi_share_unique_id(const LaunchInfo& info) {
  if (!mpi_already_initialized()) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      raise(Errc::system, "bootstrap (MPI)", "MPI_Init_thread failed");
    g_initialized_here = true;
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != info.rank || size != info.size) {
    raise(Errc::invalid_argument, "bootstrap (MPI)",
          "MPI says rank " + std::to_string(rank) + " of " + std::to_string(size) + " but the " + info.launcher +
              " variables say rank " + std::to_string(info.rank) + " of " + std::to_string(info.size));
  }
  char buf[256] = {0};
  if (rank == 0) {
    // One node: loopback; several: the interface named by GPUCOMM_BOOTSTRAP_IFNAME.
    std::string ifname = env::get_string("GPUCOMM_BOOTSTRAP_IFNAME", "");
    std::string text = UniqueId::create(ifname).to_string();
    std::strncpy(buf, text.c_str(), sizeof buf - 1);
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
  return UniqueId::parse(buf, "unique id received over MPI");
}

void mpi_finalize_if_ours() {
  if (g_initialized_here && mpi_already_initialized()) MPI_Finalize();
  g_initialized_here = false;
}
#else
bool mpi_available() {
  return false;
}
bool mpi_already_initialized() {
  return false;
}
UniqueId mpi_share_unique_id(const LaunchInfo&) {
  raise(Errc::unsupported, "bootstrap", "GPUCOMM_BOOTSTRAP=mpi, but this gpucomm was built without MPI");
}
void mpi_finalize_if_ours() {}
#endif

}  // namespace gpucomm::bootstrap
