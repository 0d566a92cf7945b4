// Splitting MPI_COMM_WORLD into the tp, dp, pp, model-parallel and embedding groups.
#include "trident/dist/topology.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "trident/dist/mpi_session.hpp"

namespace trident::dist {

namespace {

MPI_Comm duplicate(MPI_Comm base) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(base, &out));
  return out;
}

MPI_Comm split(const Communicator& world, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(world.comm(), color, key, &out));
  return out;
}

// This rank's node, named by its lowest rank in world: node_size consecutive ranks each, or
// (node_size = 0) the ranks that share memory with this one.
int node_of(Communicator& world, int node_size) {
  if (node_size > 0) return world.rank() / node_size * node_size;
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(world.comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
  int lowest = world.rank();
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, shared));
  MPI_Comm_free(&shared);
  return lowest;
}

}  // namespace

Topology::Topology(const Layout& layout, MPI_Comm base, const ReductionOps* reductions)
    : layout_(layout),
      world_(duplicate(base)),
      tp_(MPI_COMM_SELF),
      dp_(MPI_COMM_SELF),
      pp_(MPI_COMM_SELF),
      model_parallel_(MPI_COMM_SELF),
      ep_(MPI_COMM_SELF),
      edp_(MPI_COMM_SELF),
      dp_node_(MPI_COMM_SELF),
      dp_cross_(MPI_COMM_SELF) {
  TRIDENT_CONFIG_CHECK(layout.dp >= 1 && layout.tp >= 1 && layout.pp >= 1,
                       "parallel.dp, parallel.tp and parallel.pp must be >= 1");
  TRIDENT_CONFIG_CHECK(layout.ep >= 1 && layout.dp % layout.ep == 0, "parallel.ep = ", layout.ep,
                       " must divide parallel.dp = ", layout.dp, " (expert parallelism splits the data-parallel ranks)");
  const int world = world_.size();
  TRIDENT_CONFIG_CHECK(world == layout.world(), "the job has ", world, " ranks but parallel.dp * tp * pp = ",
                       layout.dp, " * ", layout.tp, " * ", layout.pp, " = ", layout.world(),
                       "; launch dp*tp*pp ranks or change the layout");
  const int rank = world_.rank();
  const int tp = layout.tp, dp = layout.dp;
  tp_rank_ = rank % tp;
  dp_rank_ = (rank / tp) % dp;
  pp_rank_ = rank / (tp * dp);

  tp_ = Communicator(split(world_, pp_rank_ * dp + dp_rank_, tp_rank_));
  dp_ = Communicator(split(world_, pp_rank_ * tp + tp_rank_, dp_rank_));
  pp_ = Communicator(split(world_, dp_rank_ * tp + tp_rank_, pp_rank_));
  model_parallel_ = Communicator(split(world_, dp_rank_, pp_rank_ * tp + tp_rank_));
  const int ep = layout.ep, replicas = dp / ep;
  ep_ = Communicator(split(world_, (pp_rank_ * tp + tp_rank_) * replicas + dp_rank_ / ep, dp_rank_ % ep));
  edp_ = Communicator(split(world_, (pp_rank_ * tp + tp_rank_) * ep + dp_rank_ % ep, dp_rank_ / ep));
  TRIDENT_CONFIG_CHECK(layout.node_size >= 0, "TRIDENT_NODE_SIZE must be >= 1 (got ", layout.node_size, ")");
  node_ = node_of(world_, layout.node_size);
  dp_node_ = Communicator(split(dp_, node_, dp_rank_));
  dp_cross_ = Communicator(split(dp_, dp_node_.rank(), dp_rank_));
  // Every dp group even over its nodes: the smallest and largest count of a dp group's ranks on
  // one node agree over the whole world, and there are at least two nodes of at least two.
  int counts[2] = {-dp_node_.size(), dp_node_.size()};
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT, MPI_MAX, world_.comm()));
  dp_spans_nodes_evenly_ = -counts[0] == counts[1] && counts[1] > 1 && counts[1] < dp;
  const bool in_embedding = is_first_stage() || is_last_stage();
  MPI_Comm emb = split(world_, in_embedding ? dp_rank_ * tp + tp_rank_ : MPI_UNDEFINED, pp_rank_);
  if (emb != MPI_COMM_NULL) embedding_ = std::make_unique<Communicator>(emb);
  if (layout.pp > 1) make_pipeline_lanes();
  for (Communicator* c :
       {&world_, &tp_, &dp_, &pp_, &model_parallel_, &ep_, &edp_, &dp_node_, &dp_cross_, embedding_.get()})
    if (c) c->set_reductions(reductions);
}

int Topology::members_on_node(Communicator& group) {
  std::vector<int> nodes(static_cast<size_t>(group.size()));
  group.all_gather_bytes(&node_, nodes.data(), sizeof(int));
  return static_cast<int>(std::count(nodes.begin(), nodes.end(), node_));
}

void Topology::set_watchdog(Watchdog* dog) {
  watchdog_ = dog;
  world_.set_watchdog(dog, "world");
  tp_.set_watchdog(dog, "tp group");
  dp_.set_watchdog(dog, "dp group");
  pp_.set_watchdog(dog, "pp group");
  model_parallel_.set_watchdog(dog, "model-parallel group");
  ep_.set_watchdog(dog, "ep group");
  edp_.set_watchdog(dog, "expert-data-parallel group");
  dp_node_.set_watchdog(dog, "dp group inside the node");
  dp_cross_.set_watchdog(dog, "dp group across nodes");
  if (embedding_) embedding_->set_watchdog(dog, "embedding group");
  for (size_t i = 0; i < lane_groups_.size(); ++i) lane_groups_[i]->set_watchdog(dog, lane_names_[i]);
}

namespace {

void attach_one(Communicator& group, const DeviceGroupMaker& maker, const std::string& name, Watchdog* dog) {
  if (group.size() == 1) return;
  DeviceCollectives::UniqueId id{};
  if (group.rank() == 0) id = maker.unique_id();
  group.broadcast(id.data(), id.size(), 0);
  WatchdogScope watch(dog, "creating the NCCL communicator", name);
  group.attach_device(maker.make(id, group.size(), group.rank(), name));
}

}  // namespace

void Topology::attach_device(const DeviceGroupMaker& maker) {
  // The same order on every rank: each creation is collective over its group only.
  attach_one(tp_, maker, "tp group", watchdog_);
  attach_one(dp_, maker, "dp group", watchdog_);
  attach_one(pp_, maker, "pp group", watchdog_);
  if (layout_.ep > 1) {  // with ep = 1 these are the dp group and single ranks: no second NCCL group
    attach_one(ep_, maker, "ep group", watchdog_);
    attach_one(edp_, maker, "expert-data-parallel group", watchdog_);
  }
  if (dp_spans_nodes_evenly_) {  // the hierarchical reduction's two groups
    attach_one(dp_node_, maker, "dp group inside the node", watchdog_);
    attach_one(dp_cross_, maker, "dp group across nodes", watchdog_);
  }
  if (embedding_) attach_one(*embedding_, maker, "embedding group", watchdog_);
  for (size_t i = 0; i < lane_groups_.size(); ++i) attach_one(*lane_groups_[i], maker, lane_names_[i], watchdog_);
}

// Pair i joins pipeline ranks i and i+1 (mod pp) by two lanes: activations from i to i+1 and
// gradients back. Every rank makes its pairs in ascending i, each collective over the pair only,
// so the creations chain without waiting in a cycle.
void Topology::make_pipeline_lanes() {
  const int pp = layout_.pp, me = pp_rank_;
  MPI_Group pp_group = MPI_GROUP_NULL;
  MPI_CHECK(MPI_Comm_group(pp_.comm(), &pp_group));
  for (int i = 0; i < pp; ++i) {
    const int ends[2] = {i, (i + 1) % pp};
    if (me != ends[0] && me != ends[1]) continue;
    MPI_Group pair = MPI_GROUP_NULL;
    MPI_CHECK(MPI_Group_incl(pp_group, 2, ends, &pair));
    for (int kind = 0; kind < 2; ++kind) {
      MPI_Comm comm = MPI_COMM_NULL;
      MPI_CHECK(MPI_Comm_create_group(pp_.comm(), pair, 2 * i + kind, &comm));
      auto lane = std::make_unique<Communicator>(comm);
      if (me == ends[0]) (kind == 0 ? lanes_.act_out : lanes_.grad_in) = lane.get();
      if (me == ends[1]) (kind == 0 ? lanes_.act_in : lanes_.grad_out) = lane.get();
      lane_names_.push_back(std::string(kind == 0 ? "activation" : "gradient") + " lane of pp ranks " +
                            std::to_string(ends[0]) + (kind == 0 ? "->" : "<-") + std::to_string(ends[1]));
      lane_groups_.push_back(std::move(lane));
    }
    MPI_Group_free(&pair);
  }
  MPI_Group_free(&pp_group);
}

void Topology::shutdown_device() {
  for (auto& lane : lane_groups_) lane->shutdown_device();  // ascending pairs, as made
  tp_.shutdown_device();
  dp_.shutdown_device();
  pp_.shutdown_device();
  ep_.shutdown_device();
  edp_.shutdown_device();
  dp_node_.shutdown_device();
  dp_cross_.shutdown_device();
  if (embedding_) embedding_->shutdown_device();
}

std::vector<std::string> Topology::host_names() {
  constexpr int kHostLen = 64;
  char host[kHostLen] = {};
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::snprintf(host, kHostLen, "%.*s", len, name);
  std::vector<char> all(size_t(kHostLen) * size_t(world_size()));
  world_.all_gather_bytes(host, all.data(), kHostLen);
  std::vector<std::string> hosts;
  for (int r = 0; r < world_size(); ++r) hosts.emplace_back(&all[size_t(r) * kHostLen]);
  return hosts;
}

std::string Topology::describe() {
  const std::vector<std::string> hosts = host_names();
  std::vector<int> coords(3 * static_cast<size_t>(world_size()));
  int mine[3] = {dp_rank_, tp_rank_, pp_rank_};
  MPI_CHECK(MPI_Gather(mine, 3, MPI_INT, coords.data(), 3, MPI_INT, 0, world_.comm()));
  std::ostringstream os;
  os << "topology: " << world_size() << " ranks = dp " << layout_.dp << " x tp " << layout_.tp << " x pp "
     << layout_.pp << (layout_.ep > 1 ? " (ep " + std::to_string(layout_.ep) + " of dp)" : std::string()) << "\n";
  const int shown = std::min(world_size(), 64);
  for (int r = 0; r < shown; ++r)
    os << "  rank " << r << " -> (dp " << coords[3 * r] << ", tp " << coords[3 * r + 1] << ", pp "
       << coords[3 * r + 2] << ") on " << hosts[static_cast<size_t>(r)] << (r + 1 < shown ? "\n" : "");
  if (shown < world_size()) os << "\n  ... " << world_size() - shown << " more ranks";
  return os.str();
}

}  // namespace trident::dist
