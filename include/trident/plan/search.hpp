// The auto-planner: every valid layout of N ranks for a model and global batch, scored by the
// step model, those that do not fit in memory dropped, best first.
#pragma once
#include <optional>
#include <vector>

#include "trident/plan/step_model.hpp"

namespace trident::plan {

struct SearchSpace {
  int ranks = 1;
  long global_batch = 1;
  std::optional<Recompute> recompute;         // unset: none, selective and full
  std::optional<bool> sequence_parallel;      // unset: on wherever tp > 1 (same traffic, less memory)
  std::optional<bool> zero;                   // unset: on wherever dp > 1
  bool dp_overlap = true;
  bool hierarchical_dp = true;                // Layout::hierarchical_dp of every layout
  int max_micro_batch = 64;
  int max_virtual_stages = 8;
};

struct SearchResult {
  std::vector<StepEstimate> fitting;  // best (shortest step) first
  long considered = 0;                // valid layouts scored
  long too_big = 0;                   // valid but over the device memory
  std::optional<StepEstimate> smallest_misfit;  // the least memory-hungry layout that did not fit
};

SearchResult search_layouts(const ModelShape& model, const Cluster& cluster, const SearchSpace& space);

}  // namespace trident::plan
