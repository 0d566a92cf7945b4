// Layer partition over virtual pipeline stages and this rank's stage plan.
#include "trident/train/pipeline/stage_plan.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "trident/plan/step_model.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"

namespace trident::train {

namespace {
// A sub-layer bound as layers: "3" (before block 3), "3.5" (between its attention and MLP).
std::string bound_text(int sublayer) { return std::to_string(sublayer / 2) + (sublayer % 2 ? ".5" : ""); }
}  // namespace

std::vector<std::pair<int, int>> partition_sublayers(const RunConfig& cfg, double* balance) {
  const int stages = cfg.layout.pp * cfg.chunks_per_rank();
  const model::ModelConfig& m = cfg.model;
  // Per-unit costs from the planner's cost model (training FLOPs per token of a block or a half,
  // the head and loss on the last stage).
  const plan::PartitionCosts costs = plan::partition_costs(m.plan_shape());
  std::vector<std::pair<int, int>> parts;
  if (cfg.partition == Partition::kBalancedSublayer) {
    parts = balanced_partition(costs.sublayers, stages, costs.first_extra, costs.last_extra);
  } else {
    parts = cfg.partition == Partition::kBalanced
                ? balanced_partition(costs.layers, stages, costs.first_extra, costs.last_extra)
                : uniform_partition(m.layers, stages);
    for (auto& p : parts) p = model::StagePlan::blocks(p.first, p.second);
  }
  if (balance) {
    const std::vector<double> c = stage_costs(parts, costs.sublayers, costs.first_extra, costs.last_extra);
    *balance = *std::max_element(c.begin(), c.end()) / (std::accumulate(c.begin(), c.end(), 0.0) / double(c.size()));
  }
  return parts;
}

model::StagePlan make_stage_plan(const RunConfig& cfg, int pp_rank, int micro_batches, std::string* description) {
  const int pp = cfg.layout.pp;
  const int v = cfg.chunks_per_rank();
  double balance = 1;
  const std::vector<std::pair<int, int>> parts = partition_sublayers(cfg, &balance);
  model::StagePlan plan;
  for (int c = 0; c < v; ++c) plan.chunks.push_back(parts[static_cast<size_t>(c * pp + pp_rank)]);
  plan.embedding = pp_rank == 0;
  plan.head = pp_rank == pp - 1;
  plan.slots = PipelineExecutor::slots_needed(cfg.schedule, pp, micro_batches, v);
  plan.recompute = cfg.recompute;
  if (description) {
    std::ostringstream os;
    os << "pipeline: pp " << pp << ", " << schedule_name(cfg.schedule);
    if (v > 1) os << " with " << v << " chunks per rank";
    os << ", " << micro_batches << " micro-batches, " << partition_name(cfg.partition) << " partition:";
    for (const auto& [first, last] : parts) os << " [" << bound_text(first) << "," << bound_text(last) << ")";
    os << " (virtual stage j on rank j % pp";
    if (cfg.partition == Partition::kBalancedSublayer) os << "; x.5: between block x's attention and its MLP";
    os << "); slowest stage / mean " << balance << " by FLOPs; bubble in theory "
       << theoretical_bubble(cfg.schedule, pp, micro_batches, v);
    *description = os.str();
  }
  return plan;
}

}  // namespace trident::train
