// Learning rate at an optimizer step: linear warmup to lr over `warmup` steps, then cosine,
// linear or constant decay to min_lr at the last step.
#pragma once
#include "trident/train/train_config.hpp"

namespace trident::train {

// step is 0-based: step s < warmup uses lr * (s + 1) / warmup.
double learning_rate(const TrainConfig& cfg, int64_t step);

}  // namespace trident::train
