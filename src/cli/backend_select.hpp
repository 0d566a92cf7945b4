// The compute backend of a rank (train.backend): cpu, cuda, or auto (cuda when a GPU is
// visible, else cpu). One MPI rank per GPU: the node-local rank picks the device.
#pragma once
#include <memory>
#include <string>

#include "trident/backend/ops.hpp"
#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"

namespace trident::cli {

// This rank's place among the ranks of its node: the launcher's word where it gives one
// (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, SLURM_LOCALID), else a node-local MPI split.
// Collective over MPI_COMM_WORLD.
struct NodeRank {
  int rank = 0;
  int size = 1;
};
NodeRank node_rank();

// The backend for kind "auto" | "cpu" | "cuda" (threads: CPU threads per rank). auto without a
// usable GPU logs one line and returns the CPU backend; cuda without one, or a node with more
// ranks than GPUs, is a ConfigError (exit code 2). Collective over MPI_COMM_WORLD unless kind
// is cpu.
std::unique_ptr<Ops> select_backend(const std::string& kind, int threads, const Logger& log);

// Collective: with the CUDA backend, an NCCL communicator for each of topology's groups that
// moves GPU tensors (Topology::attach_device), ordered after backend's compute stream; nothing
// for the CPU backend. backend must outlive them; a successful run ends them with
// topology.shutdown_device().
void attach_device_groups(dist::Topology& topology, Ops& backend);

}  // namespace trident::cli
