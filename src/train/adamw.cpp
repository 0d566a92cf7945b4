// AdamW state and update over flat-buffer segments.
#include "trident/train/adamw.hpp"

namespace trident::train {

AdamW::AdamW(model::ParamStore& params, Ops& ops, const TrainConfig& cfg, std::vector<OptimSegment> segments)
    : params_(params), ops_(ops), cfg_(cfg), segments_(std::move(segments)) {
  // Moments in the master weights' dtype: fp32 in training, fp64 in exactness tests.
  const DType dtype = params.flat_values().dtype();
  TRIDENT_CHECK(dtype == DType::kF32 || dtype == DType::kF64, "AdamW updates fp32 master weights, not ",
                dtype_name(dtype));
  int64_t total = 0;
  for (const OptimSegment& s : segments_) total += s.end - s.begin;
  exp_avg_ = ops.zeros(Shape{total}, dtype);
  exp_avg_sq_ = ops.zeros(Shape{total}, dtype);
  int64_t at = 0;
  for (const OptimSegment& s : segments_) {
    const int64_t n = s.end - s.begin;
    TRIDENT_CHECK(s.grad.numel() == n, "segment [", s.begin, ", ", s.end, ") has a gradient of ", s.grad.numel());
    values_.push_back(params.flat_values().narrow(s.begin, s.end));
    exp_avg_views_.push_back(exp_avg_.narrow(at, at + n));
    exp_avg_sq_views_.push_back(exp_avg_sq_.narrow(at, at + n));
    at += n;
  }
}

void AdamW::step(double lr, double grad_scale) {
  ++step_;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const Ops::AdamWArgs args{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                              .weight_decay = segments_[i].weight_decay ? cfg_.weight_decay : 0.0, .step = step_,
                              .grad_scale = grad_scale};
    ops_.adamw(values_[i], segments_[i].grad, exp_avg_views_[i], exp_avg_sq_views_[i], args);
  }
}

}  // namespace trident::train
