// One optimizer step: pipeline schedule, gradient reduction, clipping, AdamW.
#include "trident/train/training_step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trident/core/timer.hpp"
#include "trident/train/optim/lr_schedule.hpp"

namespace trident::train {

TrainingStep::TrainingStep(const TrainConfig& cfg, model::GPTModel& model, PipelineExecutor& pipeline,
                           GradReducer& reducer, AdamW& optimizer, LossScaler& scaler, dist::Topology& topology,
                           LisaSwitch* lisa, RunHooks* hooks)
    : cfg_(cfg), model_(model), pipeline_(pipeline), reducer_(reducer), optimizer_(optimizer), scaler_(scaler),
      topology_(topology), lisa_(lisa), hooks_(hooks) {}

StepResult TrainingStep::run(int64_t step, const std::vector<data::Batch>& batches, int64_t valid_targets) {
  Stopwatch watch;
  if (valid_targets == 0) {
    // Every rank counts the same global batch: all skip it together, nothing computed.
    StepResult r;
    r.skipped = r.no_targets = true;
    r.loss = r.grad_norm = std::numeric_limits<double>::quiet_NaN();
    r.lr = learning_rate(cfg_, step);
    r.loss_scale = scaler_.scale();
    r.seconds = watch.seconds();
    return r;
  }
  if (lisa_) lisa_->apply(step);
  model_.params().zero_grads(model_.ops());
  if (hooks_) hooks_->gradients_zeroed(step + 1, model_.ops(), model_.params().flat_grads());
  reducer_.start_step(step);
  // Each token's loss is divided by the global batch's valid targets, so the gradients summed
  // over micro-batches and dp ranks are the global-batch mean for any layout.
  // With loss scaling the gradients carry the scale; the optimizer divides it out again.
  const double loss_scale = scaler_.scale();
  const double grad_scale = loss_scale / static_cast<double>(valid_targets);
  model_.refresh_weights();  // mixed precision: the 16-bit weights of this step's masters
  double loss_sum = pipeline_.run(step, grad_scale, batches);
  reducer_.finish();
  topology_.pp().all_reduce_sum(&loss_sum, 1);  // the loss lives on the last stage
  topology_.dp().all_reduce_sum(&loss_sum, 1);

  StepResult r;
  r.loss_scale = loss_scale;
  r.loss = loss_sum / static_cast<double>(valid_targets);
  r.grad_norm = reducer_.grad_norm() / loss_scale;
  r.lr = learning_rate(cfg_, step);
  // The norm and the loss are sums over every rank's share (all-reduced), so a NaN or inf
  // anywhere reaches every rank in this same step: all skip the update together.
  r.skipped = !std::isfinite(r.grad_norm) || !std::isfinite(r.loss);
  if (!r.skipped) {
    // torch.nn.utils.clip_grad_norm_'s rule: scale by clip / (norm + 1e-6) when that is below 1.
    const double clip_scale = cfg_.clip > 0 ? std::min(1.0, cfg_.clip / (r.grad_norm + 1e-6)) : 1.0;
    optimizer_.step(r.lr, clip_scale / loss_scale);
    reducer_.gather_parameters();
  } else {
    reducer_.discard_compression_state();  // its residuals now hold the NaN/inf
  }
  scaler_.update(r.skipped);
  r.seconds = watch.seconds();
  r.bubble = pipeline_.run_seconds() > 0 ? pipeline_.wait_seconds() / r.seconds : 0;
  return r;
}

}  // namespace trident::train
