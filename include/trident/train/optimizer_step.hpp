// One optimizer step, independent of where batches come from: zero gradients, run the
// pipeline schedule over the micro-batches (gradients accumulate, normalised by the global
// batch's valid targets), sum the tied embedding's gradient over its two stages, reduce
// gradients over the dp group (once per step, overlapped with the last backward), clip by
// the global norm, AdamW update (and the ZeRO-1 all-gather).
#pragma once
#include <functional>

#include "trident/data/batch.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/adamw.hpp"
#include "trident/train/grad_reducer.hpp"
#include "trident/train/loss_scaler.hpp"
#include "trident/train/pipeline_executor.hpp"

namespace trident::train {

// What one optimizer step produced (the same on every rank).
struct StepResult {
  double loss = 0;        // mean over the valid targets of the global batch
  double grad_norm = 0;   // before clipping
  double lr = 0;
  double seconds = 0;
  double bubble = 0;      // share of the step this rank waited for pipeline neighbours
  bool skipped = false;   // non-finite loss or gradient somewhere: no update on any rank
  double loss_scale = 1;  // the scale this step used
};

// The objects one step works with; all outlive the call.
struct StepParts {
  model::GPTModel& model;
  AdamW& optimizer;
  GradReducer& reducer;
  PipelineExecutor& pipeline;
  Ops& ops;
  dist::Communicator& dp;
  dist::Communicator& pp;
  dist::Communicator* embedding;  // first + last stage (tied embeddings), nullptr elsewhere
  LossScaler* scaler = nullptr;   // fp16 loss scaling (nullptr: none)
};

// fill(k, batch) loads micro-batch k of this rank into batch. valid_targets counts the
// targets >= 0 of the whole global batch (all dp ranks).
// poison (test hook): when not 0, one of this rank's gradients starts the step at this value
// (NaN or inf) before any reduction.
StepResult optimizer_step(StepParts& parts, const TrainConfig& cfg, int64_t step, int64_t valid_targets,
                          const std::function<void(int, data::Batch&)>& fill, data::Batch& batch, double poison = 0);

}  // namespace trident::train
