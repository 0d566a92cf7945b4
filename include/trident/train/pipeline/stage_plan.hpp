// Which layers each pipeline rank holds: the layers split over pp * v virtual stages
// (uniformly, or balanced by per-layer or per-half FLOPs with the embedding and the head
// counted), this rank's chunks, and the activation slots its schedule needs.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "trident/model/gpt_model.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// The pp * v virtual stages' sub-layer ranges (model::StagePlan's units) under
// cfg.partition; balance (optional): the slowest stage's FLOPs over the mean stage's.
std::vector<std::pair<int, int>> partition_sublayers(const RunConfig& cfg, double* balance = nullptr);

// micro_batches: per step on each dp rank. description (optional) receives a one-line summary.
model::StagePlan make_stage_plan(const RunConfig& cfg, int pp_rank, int micro_batches, std::string* description);

}  // namespace trident::train
