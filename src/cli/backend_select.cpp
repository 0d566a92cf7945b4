#include "backend_select.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cpu_path.hpp"
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

// The GPU identity of every rank on this node (node: the node's ranks; collective over it),
// with their world ranks; ranks without a GPU give "".
struct NodeGpus {
  std::vector<int> world_ranks;
  std::vector<std::string> ids;
};
NodeGpus node_gpu_ids(MPI_Comm node, const std::string& mine) {
  constexpr int kLen = 64;
  int size = 1, world_rank = 0;
  MPI_Comm_size(node, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::vector<char> all(static_cast<size_t>(size) * kLen), own(kLen, '\0');
  std::copy_n(mine.begin(), std::min<size_t>(mine.size(), kLen - 1), own.begin());
  NodeGpus out;
  out.world_ranks.resize(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(own.data(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, node));
  MPI_CHECK(MPI_Allgather(&world_rank, 1, MPI_INT, out.world_ranks.data(), 1, MPI_INT, node));
  for (int r = 0; r < size; ++r) out.ids.emplace_back(&all[static_cast<size_t>(r) * kLen]);
  return out;
}

}  // namespace

int device_for_rank(const NodeRank& local, int visible) {
  if (visible >= local.size) return local.rank;
  if (visible == 1) return 0;
  return local.rank % visible;
}

std::pair<int, int> first_shared_gpu(const std::vector<std::string>& gpu_ids) {
  for (size_t i = 0; i < gpu_ids.size(); ++i)
    for (size_t j = i + 1; j < gpu_ids.size(); ++j)
      if (!gpu_ids[i].empty() && gpu_ids[i] == gpu_ids[j]) return {int(i), int(j)};
  return {-1, -1};
}

NodeRank node_rank(MPI_Comm node) {
  // The launcher's numbering wins where given, since it is what the launcher used to bind ranks
  // to cores and GPUs.
  NodeRank r;
  MPI_Comm_rank(node, &r.rank);
  MPI_Comm_size(node, &r.size);
  if (const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK"); local >= 0) {
    r.rank = local;
    if (const int size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE"); size > 0) r.size = size;
  } else if (const int slurm = env_int("SLURM_LOCALID"); slurm >= 0) {
    r.rank = slurm;
  }
  return r;
}

namespace {

std::unique_ptr<Ops> cpu_backend(int threads, const Logger& log) {
  log.info("cpu: ", cpu_path_banner());
  const char* slow = std::getenv("TRIDENT_TEST_SLOW_BF16");
  return make_cpu_ops(threads, slow && *slow && std::string(slow) != "0");
}

// The backend of kind (see select_backend), its precision not yet set.
std::unique_ptr<Ops> make_backend(const std::string& kind, int threads, const Logger& log) {
  TRIDENT_CONFIG_CHECK(kind == "auto" || kind == "cpu" || kind == "cuda",
                       "train.backend must be auto, cpu or cuda (got '", kind, "')");
  if (kind == "cpu") return cpu_backend(threads, log);
  // The node's ranks, split once on every non-cpu rank (collective), with or without a GPU.
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_comm));
  const NodeRank local = node_rank(node_comm);
  std::string why;
  const int gpus = cuda_device_count(&why);
  const int device = gpus > 0 ? device_for_rank(local, gpus) : -1;
  const std::string mine = device >= 0 ? cuda_device_uuid(device) : "";
  const NodeGpus node = node_gpu_ids(node_comm, mine);
  MPI_Comm_free(&node_comm);
  if (gpus == 0) {
    TRIDENT_CONFIG_CHECK(kind != "cuda", "train.backend = cuda, but no GPU can be used (", why,
                         "); use train.backend = auto or cpu");
    log.info("backend: no GPU (", why, "): using the CPU backend");
    return cpu_backend(threads, log);
  }
  const auto [a, b] = first_shared_gpu(node.ids);
  TRIDENT_CONFIG_CHECK(a < 0, "train.backend = ", kind, ": ranks ", node.world_ranks[size_t(a)], " and ",
                       node.world_ranks[size_t(b)], " would share ", node.ids[size_t(a)], " (", local.size,
                       " ranks on this node, ", gpus, " GPUs visible to each); run one rank per GPU");
  log.info("backend: cuda, ", gpus, gpus == 1 ? " GPU" : " GPUs", " visible per rank; node-local rank ", local.rank,
           " uses GPU ", device, " (", mine, ")");
  return make_cuda_ops(device);
}

}  // namespace

std::unique_ptr<Ops> select_backend(const std::string& kind, int threads, DType precision, MPI_Comm group,
                                    const Logger& log) {
  std::unique_ptr<Ops> backend = make_backend(kind, threads, log);
  agree_matmul_precision(*backend, precision, group, log);
  return backend;
}

DType agree_matmul_precision(Ops& backend, DType precision, MPI_Comm group, const Logger& log) {
  const DType mine = backend.set_matmul_precision(precision);
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(group, &rank));
  MPI_CHECK(MPI_Comm_size(group, &size));
  // The lowest rank that fell back, or size where none did.
  const int fell_back = mine == precision ? size : rank;
  int first = size;
  MPI_CHECK(MPI_Allreduce(&fell_back, &first, 1, MPI_INT, MPI_MIN, group));
  if (first == size || mine != precision) return mine;
  log.info("matmul precision: rank ", first, " of the run computes ", dtype_name(precision),
           " GEMMs in fp32 (measured no faster there), so every rank does");
  return backend.set_matmul_precision(DType::kF32);
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
