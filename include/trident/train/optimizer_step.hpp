// One optimizer step, independent of where batches come from: zero gradients, forward/backward
// every micro-batch (gradients accumulate, normalised by the global batch's valid targets),
// reduce gradients over the dp group (once per step, overlapped with the last backward),
// clip by the global norm, AdamW update (and the ZeRO-1 all-gather).
#pragma once
#include <functional>

#include "trident/data/batch.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/adamw.hpp"
#include "trident/train/grad_reducer.hpp"

namespace trident::train {

// What one optimizer step produced (the same on every rank).
struct StepResult {
  double loss = 0;        // mean over the valid targets of the global batch
  double grad_norm = 0;   // before clipping
  double lr = 0;
  double seconds = 0;
};

// fill(k, batch) loads micro-batch k (of micro_batches) of this rank into batch.
// valid_targets counts the targets >= 0 of the whole global batch (all dp ranks).
StepResult optimizer_step(model::GPTModel& model, AdamW& optimizer, GradReducer& reducer, Ops& ops,
                          dist::Communicator& dp, const TrainConfig& cfg, int64_t step, int64_t valid_targets,
                          int micro_batches, const std::function<void(int, data::Batch&)>& fill, data::Batch& batch);

}  // namespace trident::train
