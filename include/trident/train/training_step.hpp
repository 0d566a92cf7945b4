// TrainingStep: one whole optimizer step over this rank's micro-batches: zero the gradients,
// run the pipeline schedule (gradients accumulate, normalised by the global batch's valid
// targets; buckets start their dp reduction during the last micro-batch's backward), finish
// the gradient reduction (the tied table over its two stages, then dp), clip by the global
// norm, AdamW update (and ZeRO-1's all-gather), loss scale update. A non-finite loss or
// gradient on any rank skips the update on every rank.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/data/sampler.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/optim/adamw.hpp"
#include "trident/train/optim/grad_reducer.hpp"
#include "trident/train/optim/lisa_switch.hpp"
#include "trident/train/optim/loss_scaler.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_hooks.hpp"
#include "trident/train/train_config.hpp"

namespace trident::train {

// Where this rank's time in a step went (seconds): its own work (data, compute, optimizer,
// checkpoint) and its waits for others (comm: pipeline neighbours and the reductions). The
// straggler watch (train/straggler_watch.hpp) compares the work across ranks.
struct StepSections {
  double data = 0, compute = 0, comm = 0, optimizer = 0, checkpoint = 0;
  double work() const { return data + compute + optimizer + checkpoint; }
};

// What one optimizer step produced (the same on every rank, but `sections`).
struct StepResult {
  double loss = 0;        // mean over the valid targets of the global batch
  double grad_norm = 0;   // before clipping
  double lr = 0;
  double seconds = 0;
  double bubble = 0;      // share of the step this rank waited for pipeline neighbours
  bool skipped = false;   // no update on any rank: a non-finite loss or gradient, or no targets
  bool no_targets = false;  // the global batch held no trainable target (every token a prompt's)
  double loss_scale = 1;  // the scale this step used
  double tokens = 0;      // input positions of the step, all ranks (throughput, MFU, metrics tokens)
  // A data mixture (empty without): each source's mean loss over its valid targets in this
  // global batch (NaN where it has none), summed over ranks exactly like loss.
  std::vector<double> source_loss;
  // Differential privacy (zero without): units sampled, the share of them clipped and their
  // mean gradient norm before clipping.
  int64_t privacy_units = 0;
  double privacy_clipped = 0, privacy_unit_norm = 0;
  // Mixture of experts (zero without): the step's auxiliary losses (mean over MoE layers,
  // before their coefficients), the most loaded expert over the mean (largest over layers),
  // assignments dropped for capacity, and each MoE layer's share of assignments per expert.
  double moe_aux_loss = 0, moe_z_loss = 0, moe_load_max_over_mean = 0, moe_dropped = 0;
  std::vector<std::vector<double>> moe_load;
  // train.rerun_bad_steps: 0 the step ran once; 1 it was bad and re-run with a different result
  // (transient: the re-run's is used); 2 the re-run gave the same (persistent: today's rules).
  int rerun = 0;
  StepSections sections;  // this rank's
  std::string rerun_origin;  // the ranks whose own loss or gradients were non-finite ("" unknown)
};

class TrainingStep {
 public:
  // Every piece outlives the step. lisa (nullptr: none) switches the trained blocks before a
  // step; hooks (nullptr: none) sees the zeroed gradients (RunHooks::gradients_zeroed).
  // topology: its dp and pp groups sum the loss (it lives on the last stage).
  TrainingStep(const TrainConfig& cfg, model::GPTModel& model, PipelineExecutor& pipeline, GradReducer& reducer,
               AdamW& optimizer, LossScaler& scaler, dist::Topology& topology, LisaSwitch* lisa = nullptr,
               RunHooks* hooks = nullptr);

  // Optimizer step `step` (0-based) on batches (micro-batch k of this rank at k); batch: what
  // the whole global batch holds (all dp ranks): its valid targets normalise the loss, its
  // computed tokens the MoE auxiliary losses.
  StepResult run(int64_t step, const std::vector<data::Batch>& batches, const data::GlobalBatchStats& batch);

  // The two ends of a step, for steps that run the pipeline their own way (differential
  // privacy): begin: LISA's switch, zeroed gradients, the hooks; update: the optimizer step
  // with gradients times clip_scale / r.loss_scale (none when r.skipped), the loss scale's update.
  void begin(int64_t step);
  void update(const StepResult& r, double clip_scale);
  // train.rerun_bad_steps: a step whose loss exceeds this (a spike: the trainer's rule) is bad.
  void set_spike_threshold(double loss) { spike_threshold_ = loss; }

 private:
  const TrainConfig& cfg_;
  model::GPTModel& model_;
  PipelineExecutor& pipeline_;
  GradReducer& reducer_;
  AdamW& optimizer_;
  LossScaler& scaler_;
  dist::Topology& topology_;
  LisaSwitch* lisa_;
  RunHooks* hooks_;
  // Sums the MoE statistics over the stages and data-parallel ranks into r.
  void collect_moe_stats(StepResult& r);
  // One pass of the step up to (not including) the update: the pipeline, the reductions, the
  // loss and the gradient norm.
  StepResult attempt(int64_t step, const std::vector<data::Batch>& batches, const data::GlobalBatchStats& batch);
  bool bad(const StepResult& r) const;
  // The world ranks (with hosts) whose own loss or gradients were non-finite in the last attempt.
  std::string non_finite_origin(bool mine);

  double spike_threshold_;
  double local_loss_sum_ = 0;
  double compute_s_ = 0, comm_s_ = 0;  // this step's, re-runs included        // this rank's, before the reductions (the last attempt's)
  std::vector<std::string> hosts_;   // by world rank, gathered at the first bad step
};

}  // namespace trident::train
