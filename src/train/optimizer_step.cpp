// Pipeline schedule, tied-embedding and dp reductions, clipping and the AdamW update of one step.
#include "trident/train/optimizer_step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trident/core/timer.hpp"
#include "trident/train/lr_schedule.hpp"

namespace trident::train {

StepResult optimizer_step(StepParts& parts, const TrainConfig& cfg, int64_t step, int64_t valid_targets,
                          const std::function<void(int, data::Batch&)>& fill, data::Batch& batch, double poison) {
  Stopwatch watch;
  TRIDENT_CHECK(valid_targets > 0, "step ", step, ": the global batch has no trainable targets");
  parts.model.params().zero_grads(parts.ops);
  if (poison != 0) {  // test hook: a NaN or inf that backward accumulates into, before any reduction
    Tensor g = parts.model.params().flat_grads().narrow(0, 1);
    parts.ops.fill(g, poison);
  }
  parts.reducer.start_step(step);
  // Each token's loss is divided by the global batch's valid targets, so the gradients summed
  // over micro-batches and dp ranks are the global-batch mean for any layout.
  // With loss scaling the gradients carry the scale; the optimizer divides it out again.
  const double loss_scale = parts.scaler ? parts.scaler->scale() : 1.0;
  const double grad_scale = loss_scale / static_cast<double>(valid_targets);
  std::function<void(int64_t)> on_final;
  if (parts.reducer.overlap()) on_final = [&](int64_t offset) { parts.reducer.grads_final_from(offset); };
  parts.model.refresh_weights();  // mixed precision: the 16-bit weights of this step's masters
  double loss_sum = parts.pipeline.run(step, grad_scale, fill, batch, on_final);

  // A table tied across the first and last stage got gradient on both: sum it there.
  Tensor tied = parts.model.tied_embedding_grad();
  if (tied.defined() && parts.embedding) parts.embedding->all_reduce_sum(tied);
  parts.reducer.finish();
  parts.pp.all_reduce_sum(&loss_sum, 1);  // the loss lives on the last stage
  parts.dp.all_reduce_sum(&loss_sum, 1);

  StepResult r;
  r.loss_scale = loss_scale;
  r.loss = loss_sum / static_cast<double>(valid_targets);
  r.grad_norm = parts.reducer.grad_norm() / loss_scale;
  r.lr = learning_rate(cfg, step);
  // The norm and the loss are sums over every rank's share (all-reduced), so a NaN or inf
  // anywhere reaches every rank in this same step: all skip the update together.
  r.skipped = !std::isfinite(r.grad_norm) || !std::isfinite(r.loss);
  if (!r.skipped) {
    // torch.nn.utils.clip_grad_norm_'s rule: scale by clip / (norm + 1e-6) when that is below 1.
    const double clip_scale = cfg.clip > 0 ? std::min(1.0, cfg.clip / (r.grad_norm + 1e-6)) : 1.0;
    parts.optimizer.step(r.lr, clip_scale / loss_scale);
    parts.reducer.gather_parameters();
  }
  if (r.skipped) parts.reducer.discard_compression_state();  // its residuals now hold the NaN/inf
  if (parts.scaler) parts.scaler->update(r.skipped);
  r.seconds = watch.seconds();
  r.bubble = parts.pipeline.run_seconds() > 0 ? parts.pipeline.wait_seconds() / r.seconds : 0;
  return r;
}

}  // namespace trident::train
