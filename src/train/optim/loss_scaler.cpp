// Dynamic and fixed loss scaling.
#include "trident/train/optim/loss_scaler.hpp"

#include <cerrno>
#include <cstdlib>

#include "trident/core/error.hpp"

namespace trident::train {

LossScaler::LossScaler(const std::string& spec, bool enabled) {
  if (spec == "dynamic") {
    dynamic_ = enabled;
    scale_ = enabled ? kInitialScale : 1.0;
    return;
  }
  char* end = nullptr;
  errno = 0;
  const double fixed = std::strtod(spec.c_str(), &end);
  TRIDENT_CONFIG_CHECK(!spec.empty() && *end == '\0' && errno == 0 && fixed > 0, "train.loss_scale: expected dynamic or a "
                       "positive number, got '", spec, "'");
  scale_ = enabled ? fixed : 1.0;
}

void LossScaler::update(bool overflowed) {
  if (!dynamic_) return;
  if (overflowed) {
    scale_ = std::max(1.0, scale_ * 0.5);
    clean_steps_ = 0;
  } else if (++clean_steps_ >= kGrowthInterval) {
    scale_ *= 2.0;
    clean_steps_ = 0;
  }
}

}  // namespace trident::train
