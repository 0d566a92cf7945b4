// The compute backend of a rank (train.backend): cpu, cuda, or auto (cuda when a GPU is
// visible, else cpu). One MPI rank per GPU: the node-local rank picks the device.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trident/backend/ops.hpp"
#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"

namespace trident::cli {

// This rank's place among the ranks of its node: the launcher's word where it gives one
// (OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, SLURM_LOCALID), else its place in node, a communicator
// of the node's ranks (an MPI_COMM_TYPE_SHARED split).
struct NodeRank {
  int rank = 0;
  int size = 1;
};
NodeRank node_rank(MPI_Comm node);

// The visible GPU a rank takes: its node-local index where it sees at least as many GPUs as the
// node has ranks (mpirun: every rank sees all of them); GPU 0 where it sees one (the launcher
// gave each rank its own: Slurm's --gpus-per-task=1 sets CUDA_VISIBLE_DEVICES per task); its
// local index modulo the GPUs it sees otherwise (then a shared GPU is reported, see below).
int device_for_rank(const NodeRank& local, int visible);
// The first two node-local ranks whose GPU identities are equal (empty: that rank has none),
// or {-1, -1} when every rank has its own.
std::pair<int, int> first_shared_gpu(const std::vector<std::string>& gpu_ids);

// The backend for kind "auto" | "cpu" | "cuda" (threads: CPU threads per rank), its GEMMs set to
// `precision` where the backend computes that faster, else fp32 (Ops::set_matmul_precision:
// the one place a run decides it). auto without a usable GPU logs one line and returns the CPU
// backend; cuda without one, or two ranks of a node on one GPU (more ranks than GPUs), is a
// ConfigError (exit code 2). Collective over MPI_COMM_WORLD unless kind is cpu.
// TRIDENT_TEST_SLOW_BF16=1 in the environment takes the CPU's bf16 GEMMs as slower than fp32
// (tests of the fallback on processors where they are faster).
// The precision is agreed over `group` (agree_matmul_precision), which the caller's ranks all
// enter.
std::unique_ptr<Ops> select_backend(const std::string& kind, int threads, DType precision, MPI_Comm group,
                                    const Logger& log);

// Collective over group: sets backend's GEMMs to `precision` where every rank's backend took it,
// else fp32 on every rank, with one line naming the first rank that did not. Each rank measures
// its own GEMM rates (a loaded or oversubscribed node may flip the comparison), and the ranks of
// one run must compute alike: the tensors they exchange and the curve depend on it.
DType agree_matmul_precision(Ops& backend, DType precision, MPI_Comm group, const Logger& log);

// Collective: with the CUDA backend, an NCCL communicator for each of topology's groups that
// moves GPU tensors (Topology::attach_device), ordered after backend's compute stream; nothing
// for the CPU backend. backend must outlive them; a successful run ends them with
// topology.shutdown_device().
void attach_device_groups(dist::Topology& topology, Ops& backend);

}  // namespace trident::cli
