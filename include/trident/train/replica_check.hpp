// ReplicaCheck: silent data corruption caught where it shows. Every rank of a data-parallel
// group holds the same parameters after an update (ZeRO-1 all-gathers them back); a wrong bit
// from a faulty core, GPU or memory makes one replica differ, which nothing else would notice.
// Each check hashes this rank's parameter values (masters and frozen ones, on the host) into two
// 64-bit digests, the dense parameters' and the experts', compares the first across the dp group
// and the second across the expert-data-parallel group, and names every rank that differs from
// its group's majority (both ranks of a group of two that disagree) with its host. Collective
// over the world: every rank learns the same verdict.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/dist/topology.hpp"
#include "trident/model/param_store.hpp"

namespace trident::train {

struct ReplicaVerdict {
  bool agree = true;
  std::vector<int> ranks;            // world ranks whose replicas differ from their group's majority
  std::vector<std::string> hosts;    // their hosts, in the same order
  std::string describe() const;      // "rank 3 on node07, ..." for the log
  double seconds = 0;                // the check's time (slowest rank)
};

class ReplicaCheck {
 public:
  // Collective over the world (gathers every rank's host name).
  ReplicaCheck(model::ParamStore& params, Ops& ops, dist::Topology& topology);
  // Collective over the world.
  ReplicaVerdict run();

 private:
  // Digests of this rank's values: [dense, experts].
  void digest(uint64_t out[2]);

  model::ParamStore& params_;
  Ops& ops_;
  dist::Topology& topology_;
  std::vector<std::string> hosts_;  // by world rank
  bool has_experts_ = false;
  Tensor host_;                     // staging for device values
};

}  // namespace trident::train
