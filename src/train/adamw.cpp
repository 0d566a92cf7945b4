// AdamW state and update.
#include "trident/train/adamw.hpp"

namespace trident::train {

AdamW::AdamW(model::ParamStore& params, Ops& ops, const TrainConfig& cfg) : params_(params), ops_(ops), cfg_(cfg) {
  // Moments in the master weights' dtype: fp32 in training, fp64 in exactness tests.
  const DType dtype = params.flat_values().dtype();
  TRIDENT_CHECK(dtype == DType::kF32 || dtype == DType::kF64, "AdamW updates fp32 master weights, not ",
                dtype_name(dtype));
  exp_avg_ = ops.zeros(Shape{params.numel()}, dtype);
  exp_avg_sq_ = ops.zeros(Shape{params.numel()}, dtype);
  for (auto& p : params.all()) {
    const int64_t n = p->local_shape.numel();
    exp_avg_views_.push_back(exp_avg_.narrow(p->offset, p->offset + n));
    exp_avg_sq_views_.push_back(exp_avg_sq_.narrow(p->offset, p->offset + n));
  }
}

void AdamW::step(double lr, double grad_scale) {
  ++step_;
  auto& all = params_.all();
  for (size_t i = 0; i < all.size(); ++i) {
    model::Parameter& p = *all[i];
    Tensor value = p.value.flat();
    const Ops::AdamWArgs args{.lr = lr, .beta1 = cfg_.beta1, .beta2 = cfg_.beta2, .eps = cfg_.eps,
                              .weight_decay = p.spec.weight_decay ? cfg_.weight_decay : 0.0, .step = step_,
                              .grad_scale = grad_scale};
    ops_.adamw(value, p.grad.flat(), exp_avg_views_[i], exp_avg_sq_views_[i], args);
  }
}

}  // namespace trident::train
