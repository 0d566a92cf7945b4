// Which layers each pipeline rank holds: the layers split over pp * v virtual stages
// (uniformly, or balanced by per-layer FLOPs with the embedding and the head counted), this
// rank's chunks, and the activation slots its schedule needs.
#pragma once
#include <string>

#include "trident/model/gpt_model.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

// micro_batches: per step on each dp rank. description (optional) receives a one-line summary.
model::StagePlan make_stage_plan(const RunConfig& cfg, int pp_rank, int micro_batches, std::string* description);

}  // namespace trident::train
