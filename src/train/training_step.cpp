// One optimizer step: pipeline schedule, gradient reduction, clipping, AdamW.
#include "trident/train/training_step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "trident/core/timer.hpp"
#include "trident/train/optim/lr_schedule.hpp"

namespace trident::train {

TrainingStep::TrainingStep(const TrainConfig& cfg, model::GPTModel& model, PipelineExecutor& pipeline,
                           GradReducer& reducer, AdamW& optimizer, LossScaler& scaler, dist::Topology& topology,
                           LisaSwitch* lisa, RunHooks* hooks)
    : cfg_(cfg), model_(model), pipeline_(pipeline), reducer_(reducer), optimizer_(optimizer), scaler_(scaler),
      topology_(topology), lisa_(lisa), hooks_(hooks), spike_threshold_(std::numeric_limits<double>::infinity()) {}

StepResult TrainingStep::run(int64_t step, const std::vector<data::Batch>& batches,
                             const data::GlobalBatchStats& batch) {
  const int64_t valid_targets = batch.valid_targets;
  Stopwatch watch;
  if (valid_targets == 0) {
    // Every rank counts the same global batch: all skip it together, nothing computed.
    StepResult r;
    r.skipped = r.no_targets = true;
    r.tokens = double(cfg_.global_batch) * double(model_.config().seq_len);
    r.loss = r.grad_norm = std::numeric_limits<double>::quiet_NaN();
    r.lr = learning_rate(cfg_, step);
    r.loss_scale = scaler_.scale();
    r.seconds = watch.seconds();
    return r;
  }
  compute_s_ = comm_s_ = 0;
  StepResult r = attempt(step, batches, batch);
  if (cfg_.rerun_bad_steps && bad(r)) {
    // Nothing has changed yet but the gradients: the same data, dropout masks and reductions
    // again. The same figures again are the data's or the model's (persistent); others were a
    // fault of the moment (transient), and the re-run's result stands.
    const std::string origin = non_finite_origin(reducer_.local_non_finite() || !std::isfinite(local_loss_sum_));
    const StepResult first = r;
    r = attempt(step, batches, batch);
    const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    r.rerun = same(first.loss, r.loss) && same(first.grad_norm, r.grad_norm) ? 2 : 1;
    r.rerun_origin = origin;
  }
  // The norm and the loss are sums over every rank's share (all-reduced), so a NaN or inf
  // anywhere reaches every rank in this same step: all skip the update together.
  r.skipped = !std::isfinite(r.grad_norm) || !std::isfinite(r.loss);
  // torch.nn.utils.clip_grad_norm_'s rule: scale by clip / (norm + 1e-6) when that is below 1.
  const double update_start = watch.seconds();
  update(r, cfg_.clip > 0 && !r.skipped ? std::min(1.0, cfg_.clip / (r.grad_norm + 1e-6)) : 1.0);
  r.seconds = watch.seconds();
  r.sections.compute = compute_s_;
  r.sections.comm = comm_s_;
  r.sections.optimizer = r.seconds - update_start;
  r.bubble = pipeline_.run_seconds() > 0 ? pipeline_.wait_seconds() / r.seconds : 0;
  return r;
}

StepResult TrainingStep::attempt(int64_t step, const std::vector<data::Batch>& batches,
                                 const data::GlobalBatchStats& batch) {
  const int64_t valid_targets = batch.valid_targets;
  begin(step);
  reducer_.start_step(step);
  // Each token's loss is divided by the global batch's valid targets, so the gradients summed
  // over micro-batches and dp ranks are the global-batch mean for any layout.
  // With loss scaling the gradients carry the scale; the optimizer divides it out again.
  const double loss_scale = scaler_.scale();
  const double grad_scale = loss_scale / static_cast<double>(valid_targets);
  model_.refresh_weights();  // mixed precision: the 16-bit weights of this step's masters
  model_.set_moe_loss_scale(loss_scale / static_cast<double>(std::max<int64_t>(1, batch.computed_tokens)));
  model_.reset_moe_stats();
  // A mixture also sums each sequence's loss: [G sequences, total], reduced in one call.
  const size_t sources = batch.source_targets.size();
  std::vector<double> sums(sources > 1 ? size_t(cfg_.global_batch) + 1 : 1, 0.0);
  // Inside the pipeline's run, its waits for its neighbours and the tensor- and expert-parallel
  // collectives (where a rank waits for a slow partner) are communication; the rest is compute.
  auto group_waits = [&] { return topology_.tp().seconds() + topology_.ep().seconds(); };
  const double waits_before = group_waits();
  Stopwatch compute;
  if (hooks_) hooks_->computing(step + 1);
  sums.back() = pipeline_.run(step, grad_scale, batches, true, sources > 1 ? &sums : nullptr);
  const double waits = pipeline_.wait_seconds() + group_waits() - waits_before;
  compute_s_ += compute.seconds() - waits;
  comm_s_ += waits;
  local_loss_sum_ = sums.back();
  Stopwatch comm;
  reducer_.finish();
  topology_.pp().all_reduce_sum(sums.data(), int(sums.size()));  // the loss lives on the last stage
  topology_.dp().all_reduce_sum(sums.data(), int(sums.size()));
  const double loss_sum = sums.back();

  StepResult r;
  if (sources > 1) {
    r.source_loss.assign(sources, 0.0);
    for (size_t j = 0; j + 1 < sums.size(); ++j) r.source_loss[size_t(batch.row_source[j])] += sums[j];
    for (size_t i = 0; i < sources; ++i)
      r.source_loss[i] = batch.source_targets[i] > 0 ? r.source_loss[i] / double(batch.source_targets[i])
                                                     : std::numeric_limits<double>::quiet_NaN();
  }
  r.tokens = double(cfg_.global_batch) * double(model_.config().seq_len);
  collect_moe_stats(r);
  r.loss_scale = loss_scale;
  r.loss = loss_sum / static_cast<double>(valid_targets);
  r.grad_norm = reducer_.grad_norm() / loss_scale;
  comm_s_ += comm.seconds();
  r.lr = learning_rate(cfg_, step);
  return r;
}

bool TrainingStep::bad(const StepResult& r) const {
  return !std::isfinite(r.loss) || !std::isfinite(r.grad_norm) || r.loss > spike_threshold_;
}

std::string TrainingStep::non_finite_origin(bool mine) {
  // Collective over the world, on a bad step only (every rank sees the same reduced figures).
  if (hosts_.empty()) hosts_ = topology_.host_names();
  int flag = mine ? 1 : 0;
  std::vector<int> flags(size_t(topology_.world_size()));
  topology_.world().all_gather_bytes(&flag, flags.data(), sizeof(int));
  std::string origin;
  for (int r = 0; r < topology_.world_size(); ++r)
    if (flags[size_t(r)]) origin += detail::concat(origin.empty() ? "" : ", ", "rank ", r, " host ", hosts_[size_t(r)]);
  return origin;
}

void TrainingStep::begin(int64_t step) {
  if (lisa_) lisa_->apply(step);
  model_.params().zero_grads(model_.ops());
  if (hooks_) hooks_->gradients_zeroed(step + 1, model_.ops(), model_.params().flat_grads());
}

void TrainingStep::update(const StepResult& r, double clip_scale) {
  if (!r.skipped) {
    optimizer_.step(r.lr, clip_scale / r.loss_scale);
    reducer_.gather_parameters();
  } else {
    reducer_.discard_compression_state();  // its residuals now hold the NaN/inf
  }
  scaler_.update(r.skipped);
}

void TrainingStep::collect_moe_stats(StepResult& r) {
  const model::MoeConfig& moe = model_.config().moe;
  if (!moe.enabled()) return;
  // Each layer's row lives on one stage (zeros elsewhere); tp ranks hold identical rows.
  std::vector<double> stats = model_.moe_stats();
  topology_.pp().all_reduce_sum(stats.data(), static_cast<int>(stats.size()));
  topology_.dp().all_reduce_sum(stats.data(), static_cast<int>(stats.size()));
  const int layers = model_.config().moe_layers(), width = model::kMoeStatFields + moe.experts;
  double tokens = 0;
  for (int l = 0; l < layers; ++l) {
    const double* row = stats.data() + size_t(l) * width;
    tokens += row[0];
    r.moe_aux_loss += row[1];
    r.moe_z_loss += row[2];
    r.moe_dropped += row[3];
    const double* load = row + model::kMoeStatFields;
    const double total = std::accumulate(load, load + moe.experts, 0.0);
    std::vector<double> share(load, load + moe.experts);
    for (double& s : share) s = total > 0 ? s / total : 0.0;
    const double most = *std::max_element(load, load + moe.experts), mean = total / moe.experts;
    r.moe_load_max_over_mean = std::max(r.moe_load_max_over_mean, mean > 0 ? most / mean : 0.0);
    r.moe_load.push_back(std::move(share));
  }
  // Every layer routes the same tokens: the sums over layers give the mean over layers.
  if (tokens > 0) r.moe_aux_loss /= tokens, r.moe_z_loss /= tokens;
}

}  // namespace trident::train
