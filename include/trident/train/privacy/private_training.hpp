// PrivateTraining: differentially private optimizer steps (DP-SGD; Abadi et al. 2016) under any
// layout, and the privacy they spend.
//
// One step: the units of the step (PrivateBatches) go through forward and backward twice.
//   1. norm pass: each unit's gradient of its mean token loss is measured, not accumulated
//      (model/unit_gradients.hpp); the partial squares of every rank are summed over the
//      world (tp and pp shards add up; each unit lives on one dp replica), so every rank
//      knows every unit's norm ||g_u||.
//   2. clipped pass: unit u's loss enters with weight c_u / (n_u E), c_u = min(1, C / (||g_u||
//      + 1e-6)) (Opacus' clip factor), n_u its targets, E the expected units per step: the
//      accumulated gradient is sum_u c_u g_u / E, reduced over dp as usual.
// Then Gaussian noise N(0, (sigma C / E)^2) is added to every trainable element once, drawn by
// the counter-based RNG keyed by (seed, parameter name, global element index, step), so every
// layout adds the same noise (ZeRO-1: each rank to the block it updates). AdamW follows;
// train.clip is not applied. The accountant turns (q, sigma, steps, delta) into epsilon.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "trident/core/log.hpp"
#include "trident/model/unit_gradients.hpp"
#include "trident/train/privacy/private_batches.hpp"
#include "trident/train/training_step.hpp"

namespace trident::train {

class PrivateTraining {
 public:
  // Every piece outlives this. Finds sigma for privacy.target_epsilon when no
  // privacy.noise_multiplier is given (ConfigError when none reaches it).
  PrivateTraining(const RunConfig& cfg, const DataSource& train_data, TrainingStep& step, model::GPTModel& model,
                  PipelineExecutor& pipeline, GradReducer& reducer, LossScaler& scaler, dist::Topology& topology);

  // Optimizer step `step` (0-based).
  StepResult run(int64_t step);

  double sigma() const { return sigma_; }
  double delta() const { return delta_; }
  double sample_rate() const { return batches_.sample_rate(); }
  const PrivateBatches& batches() const { return batches_; }
  // The epsilon `steps` steps spend (0 for none).
  double epsilon(int64_t steps) const;
  // Steps the budget allows: train.steps, fewer when privacy.target_epsilon caps a given sigma.
  int64_t budget_steps() const { return budget_steps_; }
  // What a checkpoint records (privacy_* root attributes), and the check of a resumed one's:
  // ConfigError unless it was written by the same mechanism (accounting of several phases is
  // not supported) or without privacy at steps_done = 0.
  std::map<std::string, double> checkpoint_numbers(int64_t steps_done) const;
  void check_resumed(const std::map<std::string, double>& restored, int64_t steps_done) const;
  // The banner's lines.
  void log_banner(const Logger& log) const;

 private:
  void add_noise(int64_t step, double loss_scale);

  const RunConfig& cfg_;
  TrainingStep& step_;
  model::GPTModel& model_;
  PipelineExecutor& pipeline_;
  GradReducer& reducer_;
  LossScaler& scaler_;
  dist::Topology& topology_;
  PrivateBatches batches_;
  model::UnitGradients units_;
  double sigma_ = 0, delta_ = 0;
  int64_t budget_steps_ = 0;
};

}  // namespace trident::train
