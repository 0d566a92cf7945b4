#include "backend_select.hpp"

#include <mpi.h>

#include <cstdlib>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::cli {

namespace {

// A non-negative integer from the environment, or -1.
int env_int(const char* name) {
  const char* s = std::getenv(name);
  if (!s || !*s) return -1;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return *end == '\0' && v >= 0 ? static_cast<int>(v) : -1;
}

}  // namespace

NodeRank node_rank() {
  // The split runs on every rank (it is collective); the launcher's numbering wins where given,
  // since it is what the launcher used to bind ranks to cores and GPUs.
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  NodeRank r;
  MPI_Comm_rank(node, &r.rank);
  MPI_Comm_size(node, &r.size);
  MPI_Comm_free(&node);
  if (const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK"); local >= 0) {
    r.rank = local;
    if (const int size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE"); size > 0) r.size = size;
  } else if (const int slurm = env_int("SLURM_LOCALID"); slurm >= 0) {
    r.rank = slurm;
  }
  return r;
}

std::unique_ptr<Ops> select_backend(const std::string& kind, int threads, const Logger& log) {
  TRIDENT_CONFIG_CHECK(kind == "auto" || kind == "cpu" || kind == "cuda",
                       "train.backend must be auto, cpu or cuda (got '", kind, "')");
  if (kind == "cpu") return make_cpu_ops(threads);
  const NodeRank local = node_rank();
  std::string why;
  const int gpus = cuda_device_count(&why);
  if (gpus == 0) {
    TRIDENT_CONFIG_CHECK(kind != "cuda", "train.backend = cuda, but no GPU can be used (", why,
                         "); use train.backend = auto or cpu");
    log.info("backend: no GPU (", why, "): using the CPU backend");
    return make_cpu_ops(threads);
  }
  TRIDENT_CONFIG_CHECK(local.size <= gpus, "train.backend = ", kind, ": ", local.size,
                       " ranks on this node but ", gpus, " GPUs visible; run one rank per GPU");
  TRIDENT_CONFIG_CHECK(local.rank < gpus, "train.backend = ", kind, ": node-local rank ", local.rank,
                       " has no GPU (", gpus, " visible); run one rank per GPU");
  log.info("backend: cuda, ", gpus, " GPUs on this node, node-local rank r uses GPU r");
  return make_cuda_ops(local.rank);
}

void attach_device_groups(dist::Topology& topology, Ops& backend) {
  if (backend.device() != Device::kCUDA) return;
  dist::DeviceGroupMaker maker;
  maker.unique_id = [] { return nccl_unique_id(); };
  maker.make = [&backend](const DeviceCollectives::UniqueId& id, int size, int rank, const std::string& name) {
    return make_nccl_collectives(backend, id, size, rank, name);
  };
  topology.attach_device(maker);
}

}  // namespace trident::cli
