// AdamW state and update over flat-buffer segments.
#include "trident/train/optim/adamw.hpp"

namespace trident::train {

AdamW::AdamW(model::ParamStore& params, Ops& ops, const TrainConfig& cfg, std::vector<OptimSegment> segments)
    : params_(params), ops_(ops), cfg_(cfg), segments_(std::move(segments)) {
  // Moments in the master weights' dtype: fp32 in training, fp64 in exactness tests.
  const DType dtype = params.flat_values().dtype();
  TRIDENT_CHECK(dtype == DType::kF32 || dtype == DType::kF64, "AdamW updates fp32 master weights, not ",
                dtype_name(dtype));
  for (const OptimSegment& s : segments_) {
    const int64_t n = s.end - s.begin;
    TRIDENT_CHECK(s.grad.numel() == n, "segment [", s.begin, ", ", s.end, ") has a gradient of ", s.grad.numel());
    values_.push_back(params.flat_values().narrow(s.begin, s.end));
    exp_avg_.push_back(ops.zeros(Shape{n}, dtype));
    exp_avg_sq_.push_back(ops.zeros(Shape{n}, dtype));
  }
  first_step_.assign(segments_.size(), 0);
}

void AdamW::set_steps_taken(int64_t steps) { step_ = steps; }

void AdamW::set_active(const std::vector<bool>& active, const std::vector<int64_t>& since) {
  TRIDENT_CHECK(active.size() == segments_.size() && since.size() == segments_.size(), "set_active: ", active.size(),
                " flags for ", segments_.size(), " segments");
  const DType dtype = params_.flat_values().dtype();
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (active[i]) first_step_[i] = since[i];
    if (active[i] == this->active(i)) continue;
    if (active[i]) {
      const int64_t n = segments_[i].end - segments_[i].begin;
      exp_avg_[i] = ops_.zeros(Shape{n}, dtype);
      exp_avg_sq_[i] = ops_.zeros(Shape{n}, dtype);
    } else {
      exp_avg_[i] = Tensor();  // the storage goes with the last reference
      exp_avg_sq_[i] = Tensor();
    }
  }
}

size_t AdamW::state_bytes() const {
  size_t n = 0;
  for (size_t i = 0; i < segments_.size(); ++i)
    if (active(i)) n += exp_avg_[i].bytes() + exp_avg_sq_[i].bytes();
  return n;
}

void AdamW::step(double lr, double grad_scale) {
  ++step_;
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (!active(i)) continue;
    const Ops::AdamWArgs args{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                              .weight_decay = segments_[i].weight_decay ? cfg_.weight_decay : 0.0,
                              .step = step_ - first_step_[i], .grad_scale = grad_scale,
                              .variance_step = freeze_after_ > 0 && step_ > freeze_after_ ? long(freeze_after_) : 0};
    ops_.adamw(values_[i], segments_[i].grad, exp_avg_[i], exp_avg_sq_[i], args);
  }
}

}  // namespace trident::train
