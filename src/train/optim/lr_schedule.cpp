// Warmup + decay learning-rate schedule.
#include "trident/train/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "trident/core/error.hpp"

namespace trident::train {

Decay decay_from_name(const std::string& name) {
  if (name == "cosine") return Decay::kCosine;
  if (name == "linear") return Decay::kLinear;
  if (name == "const") return Decay::kConst;
  throw ConfigError("train.decay: unknown schedule '" + name + "' (expected cosine, linear or const)");
}

double learning_rate(const TrainConfig& cfg, int64_t step) {
  if (step < cfg.warmup) return cfg.lr * double(step + 1) / double(cfg.warmup);
  if (cfg.decay == Decay::kConst) return cfg.lr;
  const double span = double(std::max<int64_t>(1, cfg.steps - cfg.warmup));
  const double progress = std::clamp(double(step - cfg.warmup) / span, 0.0, 1.0);
  if (cfg.decay == Decay::kLinear) return cfg.lr - (cfg.lr - cfg.min_lr) * progress;
  return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace trident::train
