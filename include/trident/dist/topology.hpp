// Topology: the 3D grid of data, tensor and pipeline parallelism, built once in main by
// splitting MPI_COMM_WORLD (docs/design.md section 3). Grid order, fastest first: tp, dp, pp:
//   rank = (pp_i * dp + dp_i) * tp + tp_i
// Worked example, 16 ranks, tp=2, dp=2, pp=4:
//   tp groups (consecutive ranks, one node): {0,1} {2,3} ... {14,15}
//   dp groups (same pp_i, tp_i):             {0,2} {1,3} {4,6} {5,7} ...
//   pp groups (same dp_i, tp_i):             {0,4,8,12} {1,5,9,13} {2,6,10,14} {3,7,11,15}
//   model-parallel groups (same dp_i):       {0,1,4,5,8,9,12,13} {2,3,6,7,10,11,14,15}
//   embedding groups (first + last stage):   {0,12} {1,13} {2,14} {3,15}
// Expert parallelism (ep divides dp) splits each dp group into ep groups of ep consecutive dp
// ranks (dp_i = edp_i * ep + ep_i), which hold different experts and trade tokens, and
// expert-data-parallel groups (same ep_i), which hold the same experts and reduce their
// gradients. 8 ranks, dp=4, ep=2, tp=pp=1: ep groups {0,1} {2,3}, edp groups {0,2} {1,3}.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trident/dist/communicator.hpp"

namespace trident::dist {

// Makes this rank's member of a GPU group (NCCL in the CUDA backend): unique_id() runs on the
// group's rank 0, whose id the others receive over MPI; make() is collective over the group.
struct DeviceGroupMaker {
  std::function<DeviceCollectives::UniqueId()> unique_id;
  std::function<std::unique_ptr<DeviceCollectives>(const DeviceCollectives::UniqueId& id, int size, int rank,
                                                   const std::string& name)>
      make;
};

// Pipeline point-to-point: a two-rank communicator per direction and kind between neighbouring
// stages (peer: rank 1 - rank() in each). For the GPU: NCCL runs a communicator's operations in
// order on one stream, so on a single pp communicator a send waiting for its receiver would
// hold up the receives queued behind it; with one lane per (sender, receiver, kind) every lane
// is a FIFO that both ends walk in the same order (tested against the schedules), which is how
// MPI's tagged non-blocking messages behave. The CPU uses the same lanes over MPI, so every
// pipeline run here exercises the wiring the GPU relies on.
struct PipelineLanes {
  Communicator* act_out;   // activations to the next stage
  Communicator* act_in;    // activations from the previous stage
  Communicator* grad_out;  // gradients to the previous stage
  Communicator* grad_in;   // gradients from the next stage
};

struct Layout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;  // expert parallelism: a split of dp, not a fourth dimension of ranks
  // Ranks per node: 0 = the ranks that share memory (MPI_COMM_TYPE_SHARED); k > 0 = k
  // consecutive ranks each (TRIDENT_NODE_SIZE: nodes modelled on one machine, for tests).
  int node_size = 0;
  int world() const { return dp * tp * pp; }
};

class Topology {
 public:
  // Collective over base (MPI_COMM_WORLD in main; tests may pass MPI_COMM_SELF or a split), which
  // is duplicated, not owned. base's size != dp*tp*pp is a ConfigError.
  // reductions: the session's bf16/fp16 sums, given to every group (nullptr: none).
  Topology(const Layout& layout, MPI_Comm base, const ReductionOps* reductions = nullptr);

  const Layout& layout() const { return layout_; }
  int world_rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }
  int dp_rank() const { return dp_rank_; }
  int tp_rank() const { return tp_rank_; }
  int pp_rank() const { return pp_rank_; }
  int edp_rank() const { return dp_rank_ / layout_.ep; }
  bool is_first_stage() const { return pp_rank_ == 0; }
  bool is_last_stage() const { return pp_rank_ == layout_.pp - 1; }

  Communicator& world() { return world_; }
  Communicator& tp() { return tp_; }
  Communicator& dp() { return dp_; }
  Communicator& pp() { return pp_; }
  Communicator& model_parallel() { return model_parallel_; }
  Communicator& ep() { return ep_; }    // ranks holding different experts (size ep)
  Communicator& edp() { return edp_; }  // ranks holding the same experts (size dp / ep)
  // The dp group split by node: its ranks on this node (dp_node) and its ranks with this rank's
  // index inside their node (dp_cross, one per node). A hierarchical dp reduction
  // reduce-scatters over dp_node, reduces its shard over dp_cross and all-gathers over dp_node.
  Communicator& dp_node() { return dp_node_; }
  Communicator& dp_cross() { return dp_cross_; }
  // The same on every rank: every dp group spans more than one node with the same number
  // (> 1) of its ranks on each, so the hierarchical reduction applies.
  bool dp_spans_nodes_evenly() const { return dp_spans_nodes_evenly_; }
  // This rank's node, named by its lowest world rank.
  int node() const { return node_; }
  // Collective over group: how many of its ranks (this one included) share this rank's node.
  int members_on_node(Communicator& group);

  // Only meaningful on the first and last pipeline stage (nullptr elsewhere).
  Communicator* embedding() { return embedding_.get(); }
  // With pp > 1; nullptr otherwise.
  const PipelineLanes* pipeline_lanes() const { return lanes_.act_out ? &lanes_ : nullptr; }

  // Collective: the tp, dp, pp and embedding groups of more than one rank get a GPU group each,
  // so GPU tensors passed to them travel over it (the world and model-parallel groups only
  // reduce host scalars), and so do the pipeline lanes. Call set_watchdog first,
  // so that a rank that never joins is reported.
  void attach_device(const DeviceGroupMaker& maker);
  // Collective: ends the GPU groups (explicit NCCL shutdown; never from destructors).
  void shutdown_device();

  // Every group reports its blocking waits to dog (it must outlive the topology's use).
  void set_watchdog(Watchdog* dog);
  Watchdog* watchdog() const { return watchdog_; }

  // Collective over the world: every rank's host name (MPI_Get_processor_name), by world rank.
  std::vector<std::string> host_names();
  // Collective: rank -> (dp, tp, pp) and host, one line per rank (rank 0's string is complete).
  std::string describe();

 private:
  void make_pipeline_lanes();

  Layout layout_;
  int dp_rank_ = 0, tp_rank_ = 0, pp_rank_ = 0;
  Communicator world_;
  Communicator tp_;
  Communicator dp_;
  Communicator pp_;
  Communicator model_parallel_;
  Communicator ep_;
  Communicator edp_;
  int node_ = 0;  // this rank's node: the lowest world rank on it
  Communicator dp_node_;
  Communicator dp_cross_;
  bool dp_spans_nodes_evenly_ = false;
  std::unique_ptr<Communicator> embedding_;
  std::vector<std::unique_ptr<Communicator>> lane_groups_;  // owns the lanes' communicators
  std::vector<std::string> lane_names_;
  PipelineLanes lanes_{};
  Watchdog* watchdog_ = nullptr;
};

}  // namespace trident::dist
