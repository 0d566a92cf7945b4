// Loss scaling for fp16 (train.loss_scale): the loss gradient is multiplied by the scale so
// small gradients survive fp16 rounding; gradients are unscaled in the optimizer. Dynamic
// scaling halves the scale and skips the step when any gradient overflowed, and doubles it
// after growth_interval clean steps (PyTorch GradScaler's defaults). fp32 and bf16 use 1.
#pragma once
#include <cstdint>
#include <string>

namespace trident::train {

class LossScaler {
 public:
  // spec: "dynamic" or a positive number (fixed scale); enabled: fp16 training.
  LossScaler(const std::string& spec, bool enabled);
  double scale() const { return scale_; }
  bool dynamic() const { return dynamic_; }
  // After a step: overflowed = non-finite gradients (the step was skipped).
  void update(bool overflowed);
  void restore(double scale) { scale_ = scale; }

  static constexpr double kInitialScale = 65536.0;
  static constexpr int kGrowthInterval = 2000;

 private:
  double scale_ = 1.0;
  bool dynamic_ = false;
  int clean_steps_ = 0;
};

}  // namespace trident::train
