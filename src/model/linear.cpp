// Linear forward and backward as GEMMs on the Ops backend.
#include "trident/model/linear.hpp"

namespace trident::model {

Linear::Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std,
               bool weight_decay) {
  weight_ = &store.add({.name = name + ".weight", .global_shape = Shape{out, in}, .init = Init::kNormal,
                        .init_std = init_std, .weight_decay = weight_decay});
  if (bias) bias_ = &store.add({.name = name + ".bias", .global_shape = Shape{out}, .init = Init::kZeros});
}

void Linear::forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate) const {
  ops.gemm(false, true, 1.0, x, weight_->value, accumulate ? 1.0 : 0.0, y);
  if (bias_) ops.add_bias(y, bias_->value);
}

void Linear::backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx) const {
  ops.gemm(true, false, 1.0, dy, x, 1.0, weight_->grad);  // [out, N] @ [N, in]
  if (bias_) ops.bias_backward(dy, bias_->grad);
  if (dx) ops.gemm(false, false, 1.0, dy, weight_->value, accumulate_dx ? 1.0 : 0.0, *dx);  // [N, out] @ [out, in]
}

}  // namespace trident::model
