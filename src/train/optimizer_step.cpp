// Gradient accumulation, dp reduction, clipping and the AdamW update of one step.
#include "trident/train/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

#include "trident/core/timer.hpp"
#include "trident/train/lr_schedule.hpp"

namespace trident::train {

StepResult optimizer_step(model::GPTModel& model, AdamW& optimizer, GradReducer& reducer, Ops& ops,
                          dist::Communicator& dp, const TrainConfig& cfg, int64_t step, int64_t valid_targets,
                          int micro_batches, const std::function<void(int, data::Batch&)>& fill, data::Batch& batch) {
  Stopwatch watch;
  TRIDENT_CHECK(valid_targets > 0, "step ", step, ": the global batch has no trainable targets");
  model.params().zero_grads(ops);
  reducer.start_step();
  // Each token's loss is divided by the global batch's valid targets, so the gradients summed
  // over micro-batches and dp ranks are the global-batch mean for any layout.
  const double grad_scale = 1.0 / static_cast<double>(valid_targets);
  double loss_sum = 0;
  for (int k = 0; k < micro_batches; ++k) {
    // Gradients are final only in the last micro-batch: reduction starts during its backward.
    if (k + 1 == micro_batches && reducer.overlap())
      model.set_grad_ready_hook([&](int64_t offset) { reducer.grads_final_from(offset); });
    fill(k, batch);
    model.set_micro_batch_position(step, batch.first_sequence);
    loss_sum += model.forward_backward(batch.tokens, batch.targets, batch.positions, grad_scale);
  }
  model.set_grad_ready_hook(nullptr);
  reducer.finish();
  dp.all_reduce_sum(&loss_sum, 1);

  StepResult r;
  r.loss = loss_sum * grad_scale;
  r.grad_norm = reducer.grad_norm();
  r.lr = learning_rate(cfg, step);
  // torch.nn.utils.clip_grad_norm_'s rule: scale by clip / (norm + 1e-6) when that is below 1.
  const double clip_scale = cfg.clip > 0 ? std::min(1.0, cfg.clip / (r.grad_norm + 1e-6)) : 1.0;
  optimizer.step(r.lr, clip_scale);
  reducer.gather_parameters();
  r.seconds = watch.seconds();
  return r;
}

}  // namespace trident::train
