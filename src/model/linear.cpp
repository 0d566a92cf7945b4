// Linear forward and backward as GEMMs on the Ops backend.
#include "trident/model/linear.hpp"

namespace trident::model {

Linear::Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std, Split split,
               TensorParallel tp)
    : split_(tp.size() > 1 ? split : Split::kNone), tp_(tp) {
  const int weight_split = split_ == Split::kColumn ? 0 : split_ == Split::kRow ? 1 : -1;
  weight_ = &store.add({.name = name + ".weight", .global_shape = Shape{out, in}, .init = Init::kNormal,
                        .init_std = init_std, .weight_decay = true, .split_dim = weight_split,
                        .split_parts = tp.size(), .split_index = tp.rank()});
  if (bias)
    bias_ = &store.add({.name = name + ".bias", .global_shape = Shape{out}, .init = Init::kZeros,
                        .split_dim = split_ == Split::kColumn ? 0 : -1, .split_parts = tp.size(),
                        .split_index = tp.rank()});
}

void Linear::forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate) const {
  if (split_ == Split::kRow) {
    TRIDENT_CHECK(!accumulate, "a row-parallel output is partial until summed over the group");
    ops.gemm(false, true, 1.0, x, weight_->gemm_value(), 0.0, y);
    return;
  }
  ops.gemm(false, true, 1.0, x, weight_->gemm_value(), accumulate ? 1.0 : 0.0, y);
  if (bias_) ops.add_bias(y, bias_->value);
}

void Linear::add_bias(Ops& ops, Tensor& y) const {
  if (bias_) ops.add_bias(y, bias_->value);
}

void Linear::backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx) const {
  ops.gemm(true, false, 1.0, dy, x, 1.0, weight_->grad);  // [out, N] @ [N, in]
  if (bias_) ops.bias_backward(dy, bias_->grad);
  if (dx) ops.gemm(false, false, 1.0, dy, weight_->gemm_value(), accumulate_dx ? 1.0 : 0.0, *dx);  // [N, out] @ [out, in]
}

}  // namespace trident::model
