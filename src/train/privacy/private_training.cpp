// DP-SGD steps: norm pass, clip factors, clipped pass, noise, update; and their accounting.
#include "trident/train/privacy/private_training.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/timer.hpp"
#include "trident/train/optim/lr_schedule.hpp"

namespace trident::train {

PrivateTraining::PrivateTraining(const RunConfig& cfg, const DataSource& train_data, TrainingStep& step,
                                 model::GPTModel& model, PipelineExecutor& pipeline, GradReducer& reducer,
                                 LossScaler& scaler, dist::Topology& topology)
    : cfg_(cfg), step_(step), model_(model), pipeline_(pipeline), reducer_(reducer), scaler_(scaler),
      topology_(topology), batches_(train_data, cfg, topology, pipeline.fewer_micro_batches()),
      units_(topology.tp_rank()) {
  const PrivacyConfig& p = cfg.privacy;
  delta_ = p.delta > 0 ? p.delta : 1.0 / double(batches_.num_units());
  TRIDENT_CONFIG_CHECK(delta_ < 1, "privacy.delta = 1 / N needs more than one privacy unit in data.train");
  sigma_ = p.noise_multiplier > 0 ? p.noise_multiplier
                                  : privacy::noise_for_epsilon(p.accountant, p.target_epsilon, sample_rate(),
                                                               cfg.train.steps, delta_);
  privacy::check_mechanism({.sample_rate = sample_rate(), .noise = sigma_, .steps = cfg.train.steps}, delta_);
  budget_steps_ = cfg.train.steps;
  if (p.noise_multiplier > 0 && p.target_epsilon > 0 && epsilon(budget_steps_) > p.target_epsilon) {
    // The most steps within the budget (epsilon grows with the steps): bisection.
    int64_t lo = 0, hi = budget_steps_;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (epsilon(mid) <= p.target_epsilon ? lo : hi) = mid;
    }
    budget_steps_ = lo;
  }
}

double PrivateTraining::epsilon(int64_t steps) const {
  if (steps <= 0) return 0.0;
  return privacy::epsilon(cfg_.privacy.accountant, {.sample_rate = sample_rate(), .noise = sigma_, .steps = steps},
                          delta_);
}

void PrivateTraining::log_banner(const Logger& log) const {
  const PrivacyConfig& p = cfg_.privacy;
  log.info("privacy: DP-SGD over ", batches_.num_units(), " ", privacy_unit_name(p.unit), "s, ",
           privacy_sampling_name(p.sampling), " sampling q = ", sample_rate(), " (", batches_.expected_units(),
           " expected per step), clip C = ", p.clip, ", sigma = ", sigma_, ", delta = ", delta_, "; ",
           privacy::accountant_name(p.accountant), " epsilon after ", budget_steps_, " steps: ", epsilon(budget_steps_));
  if (budget_steps_ < cfg_.train.steps)
    log.info("privacy: the budget epsilon = ", p.target_epsilon, " stops training after ", budget_steps_, " of ",
             cfg_.train.steps, " steps");
  if (cfg_.train.clip > 0) log.info("privacy: train.clip = ", cfg_.train.clip, " is not applied (each unit is clipped instead)");
  if (batches_.long_documents() > 0)
    log.info("privacy: ", batches_.long_documents(), " documents are longer than seq_len + 1 = ", cfg_.model.seq_len + 1,
             " tokens; each is trained on its first seq_len + 1");
  if (p.sampling == PrivacySampling::kShuffle)
    log.info("privacy: warning: privacy.sampling = shuffle; the epsilon reported is that of Poisson sampling at the "
             "same rate, not a proven bound for shuffled batches");
}

StepResult PrivateTraining::run(int64_t step) {
  Stopwatch watch;
  const PrivateStepBatches& b = batches_.load(step);
  const int64_t K = b.units;
  const double E = double(batches_.expected_units()), C = cfg_.privacy.clip;
  StepResult r;
  r.lr = learning_rate(cfg_.train, step);
  r.loss_scale = scaler_.scale();
  r.privacy_units = K;
  r.tokens = double(b.stats.computed_tokens);  // the rows the sample filled, not global_batch * seq_len
  step_.begin(step);
  model_.refresh_weights();

  // 1. Each unit's gradient norm (of its mean token loss), summed over every rank's shares.
  std::vector<double> weights(static_cast<size_t>(K));
  for (int64_t u = 0; u < K; ++u) weights[size_t(u)] = b.unit_targets[size_t(u)] > 0 ? 1.0 / double(b.unit_targets[size_t(u)]) : 0.0;
  units_.start(K, /*measure=*/true, weights);
  model_.set_unit_gradients(&units_);
  for (const auto& round : b.rounds) pipeline_.run(step, 1.0, round, /*final_pass=*/false);
  std::vector<double> squares = units_.squares();
  if (K > 0) topology_.world().all_reduce_sum(squares.data(), int(K));

  // 2. The clipped sum: unit u's loss weighted by c_u / (n_u E) (times the loss scale).
  int64_t clipped = 0;
  double norm_sum = 0;
  for (int64_t u = 0; u < K; ++u) {
    const double norm = std::sqrt(squares[size_t(u)]), factor = std::min(1.0, C / (norm + 1e-6));
    clipped += factor < 1.0;
    norm_sum += norm;
    weights[size_t(u)] = r.loss_scale * factor * weights[size_t(u)] / E;
  }
  r.privacy_clipped = K > 0 ? double(clipped) / double(K) : 0.0;
  r.privacy_unit_norm = K > 0 ? norm_sum / double(K) : 0.0;
  reducer_.start_step(step);
  units_.start(K, /*measure=*/false, weights);
  model_.set_unit_gradients(&units_);
  double loss_sum = 0;
  for (size_t k = 0; k < b.rounds.size(); ++k)
    loss_sum += pipeline_.run(step, 1.0, b.rounds[k], /*final_pass=*/k + 1 == b.rounds.size());
  model_.set_unit_gradients(nullptr);
  reducer_.finish();
  topology_.pp().all_reduce_sum(&loss_sum, 1);  // the loss lives on the last stage
  topology_.dp().all_reduce_sum(&loss_sum, 1);
  const int64_t valid = b.stats.valid_targets;
  r.no_targets = valid == 0;
  r.loss = valid > 0 ? loss_sum / double(valid) : std::numeric_limits<double>::quiet_NaN();
  r.grad_norm = reducer_.grad_norm() / r.loss_scale;  // of the clipped mean, before noise

  // 3. Noise on the sum, then the update (a step without units is noise alone).
  add_noise(step, r.loss_scale);
  r.skipped = !std::isfinite(r.grad_norm) || (valid > 0 && !std::isfinite(r.loss));
  step_.update(r, 1.0);
  r.seconds = watch.seconds();
  r.bubble = pipeline_.run_seconds() > 0 ? pipeline_.wait_seconds() / r.seconds : 0;
  return r;
}

void PrivateTraining::add_noise(int64_t step, double loss_scale) {
  const double std_dev = loss_scale * sigma_ * cfg_.privacy.clip / double(batches_.expected_units());
  Ops& ops = model_.ops();
  for (const OptimSegment& seg : reducer_.optimizer_segments()) {
    for (const auto& p : model_.params().all()) {
      if (!p->needs_grad()) continue;
      const int64_t n = p->value.numel(), lo = std::max(seg.begin, p->offset), hi = std::min(seg.end, p->offset + n);
      if (lo >= hi) continue;
      const uint64_t key = rng_key(cfg_.train.seed, "privacy.noise." + p->spec.name);
      // Rows of vocabulary padding (never a token) get none; a shard's elements are added in
      // runs of consecutive global indices (a row-parallel shard: one run per row).
      const Shape& global = p->spec.global_shape;
      const int64_t row_elems = global.numel() / std::max<int64_t>(1, global[0]);
      const int64_t last = p->spec.init_rows >= 0 ? p->spec.init_rows * row_elems : global.numel();
      const int64_t run = p->spec.split_dim >= 1 ? p->local_shape[p->local_shape.ndim() - 1] : n;
      Tensor grad = seg.grad.flat();
      for (int64_t i = lo - p->offset; i < hi - p->offset;) {
        const int64_t end = std::min(hi - p->offset, (i / run + 1) * run), g = model::ParamStore::global_index(*p, i);
        const int64_t count = std::min(end - i, std::max<int64_t>(0, last - g));
        if (count > 0) {
          Tensor piece = grad.narrow(p->offset + i - seg.begin, p->offset + i - seg.begin + count);
          ops.add_gaussian(piece, std_dev, key, uint64_t(step), g);
        }
        i = end;
      }
    }
  }
}

std::map<std::string, double> PrivateTraining::checkpoint_numbers(int64_t steps_done) const {
  return {{"privacy_epsilon", epsilon(steps_done)},
          {"privacy_delta", delta_},
          {"privacy_sigma", sigma_},
          {"privacy_sample_rate", sample_rate()},
          {"privacy_clip", cfg_.privacy.clip},
          {"privacy_accountant", cfg_.privacy.accountant == privacy::Accountant::kPrv ? 1.0 : 0.0}};
}

void PrivateTraining::check_resumed(const std::map<std::string, double>& restored, int64_t steps_done) const {
  if (steps_done == 0) return;
  TRIDENT_CONFIG_CHECK(!restored.empty(), "privacy.enabled: the checkpoint resumed (", steps_done,
                       " steps done) was trained without privacy; its steps cannot be accounted for");
  for (const auto& [name, value] : checkpoint_numbers(steps_done)) {
    if (name == "privacy_epsilon") continue;
    const auto it = restored.find(name);
    TRIDENT_CONFIG_CHECK(it != restored.end() && std::abs(it->second - value) <= 1e-12 * std::abs(value),
                         "privacy: the checkpoint resumed was trained with ", name.substr(8), " = ",
                         it == restored.end() ? std::string("(none)") : detail::concat(it->second), ", this run has ",
                         value, "; accounting over phases with different mechanisms is not supported");
  }
}

}  // namespace trident::train
