// Layer partition over virtual pipeline stages and this rank's stage plan.
#include "trident/train/pipeline/stage_plan.hpp"

#include <sstream>

#include "trident/plan/step_model.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"

namespace trident::train {

model::StagePlan make_stage_plan(const RunConfig& cfg, int pp_rank, int micro_batches, std::string* description) {
  const int pp = cfg.layout.pp;
  const int v = cfg.schedule == ScheduleKind::kInterleaved ? cfg.virtual_stages : 1;
  const model::ModelConfig& m = cfg.model;
  std::vector<std::pair<int, int>> parts;
  if (cfg.balanced_partition) {
    // Per-layer costs from the planner's cost model (training FLOPs per token of a block, the
    // head and loss on the last stage).
    const plan::PartitionCosts costs = plan::partition_costs(m.plan_shape());
    parts = balanced_partition(costs.layers, pp * v, costs.first_extra, costs.last_extra);
  } else {
    parts = uniform_partition(m.layers, pp * v);
  }
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
    os << ", " << micro_batches << " micro-batches, " << (cfg.balanced_partition ? "balanced" : "uniform")
       << " partition:";
    for (size_t j = 0; j < parts.size(); ++j)
      os << " [" << parts[j].first << "," << parts[j].second << ")" << (j % pp == size_t(pp - 1) ? "" : "");
    os << " (virtual stage j on rank j % pp); bubble in theory "
       << theoretical_bubble(cfg.schedule, pp, micro_batches, v);
    *description = os.str();
  }
  return plan;
}

}  // namespace trident::train
