// One directory under /tmp for every rank of an MPI test job (named by rank 0's process id, so
// that a resume finds what every rank wrote), removed by rank 0 once all ranks are done with it.
// Collective: construct and destroy it on every rank.
#pragma once
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace trident::testing {

struct MpiJobDir {
  std::string path;
  explicit MpiJobDir(const std::string& prefix) {
    int id = getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path = "/tmp/" + prefix + "_" + std::to_string(id);
  }
  ~MpiJobDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::filesystem::remove_all(path);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MpiJobDir(const MpiJobDir&) = delete;
  MpiJobDir& operator=(const MpiJobDir&) = delete;
};

}  // namespace trident::testing
