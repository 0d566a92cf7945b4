// Linear forward and backward as GEMMs on the Ops backend.
#include "trident/model/linear.hpp"

#include <cmath>

namespace trident::model {

Linear::Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std, Split split,
               TensorParallel tp, int lora_rank, double lora_scale)
    : split_(tp.size() > 1 ? split : Split::kNone), tp_(tp), lora_scale_(lora_scale) {
  const int weight_split = split_ == Split::kColumn ? 0 : split_ == Split::kRow ? 1 : -1;
  weight_ = &store.add({.name = name + ".weight", .global_shape = Shape{out, in}, .init = Init::kNormal,
                        .init_std = init_std, .weight_decay = true, .split_dim = weight_split,
                        .split_parts = tp.size(), .split_index = tp.rank()});
  if (bias)
    bias_ = &store.add({.name = name + ".bias", .global_shape = Shape{out}, .init = Init::kZeros,
                        .split_dim = split_ == Split::kColumn ? 0 : -1, .split_parts = tp.size(),
                        .split_index = tp.rank()});
  if (lora_rank > 0) {
    lora_a_ = &store.add({.name = name + ".lora_A.weight", .global_shape = Shape{lora_rank, in},
                          .init = Init::kUniform, .init_std = 1.0 / std::sqrt(double(in)), .weight_decay = true,
                          .split_dim = split_ == Split::kRow ? 1 : -1, .split_parts = tp.size(),
                          .split_index = tp.rank(), .adapter = true});
    lora_b_ = &store.add({.name = name + ".lora_B.weight", .global_shape = Shape{out, lora_rank},
                          .init = Init::kZeros, .weight_decay = true, .split_dim = split_ == Split::kColumn ? 0 : -1,
                          .split_parts = tp.size(), .split_index = tp.rank(), .adapter = true});
  }
}

void Linear::forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate) const {
  if (split_ == Split::kRow) {
    TRIDENT_CHECK(!accumulate, "a row-parallel output is partial until summed over the group");
    ops.gemm(false, true, 1.0, x, weight_->gemm_value(), 0.0, y);
  } else {
    ops.gemm(false, true, 1.0, x, weight_->gemm_value(), accumulate ? 1.0 : 0.0, y);
    if (bias_) ops.add_bias(y, bias_->value);
  }
  if (lora_a_) lora_forward(ops, x, y);
}

Tensor Linear::lora_rows(Ops& ops, Tensor& buffer, int64_t rows) const {
  const int64_t r = lora_a_->local_shape[0];
  if (!buffer.defined() || buffer.dim(0) < rows) buffer = ops.zeros(Shape{rows, r}, lora_a_->value.dtype());
  return buffer.narrow(0, rows);
}

void Linear::lora_forward(Ops& ops, const Tensor& x, Tensor& y) const {
  Tensor h = lora_rows(ops, lora_h_, x.numel() / x.dim(-1));
  ops.gemm(false, true, 1.0, x, lora_a_->gemm_value(), 0.0, h);  // h = x A^T
  if (split_ == Split::kRow) {
    tp_.all_reduce(h);
    if (tp_.rank() != 0) return;
  }
  ops.gemm(false, true, lora_scale_, h, lora_b_->gemm_value(), 1.0, y);  // y += s h B^T
}

void Linear::lora_backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx) const {
  const int64_t rows = x.numel() / x.dim(-1);
  Tensor h = lora_rows(ops, lora_h_, rows), dh = lora_rows(ops, lora_dh_, rows);
  ops.gemm(false, true, 1.0, x, lora_a_->gemm_value(), 0.0, h);
  if (split_ == Split::kRow) tp_.all_reduce(h);
  ops.gemm(true, false, lora_scale_, dy, h, 1.0, lora_b_->grad);           // dB += s dy^T h
  ops.gemm(false, false, lora_scale_, dy, lora_b_->gemm_value(), 0.0, dh);  // dh = s dy B
  if (split_ == Split::kColumn) tp_.all_reduce(dh);  // each rank held some output columns
  ops.gemm(true, false, 1.0, dh, x, 1.0, lora_a_->grad);                     // dA += dh^T x
  if (dx && (split_ != Split::kColumn || tp_.rank() == 0)) ops.gemm(false, false, 1.0, dh, lora_a_->gemm_value(), 1.0, *dx);
}

void Linear::add_bias(Ops& ops, Tensor& y) const {
  if (bias_) ops.add_bias(y, bias_->value);
}

void Linear::backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx) const {
  if (weight_->needs_grad()) ops.gemm(true, false, 1.0, dy, x, 1.0, weight_->grad);  // [out, N] @ [N, in]
  if (bias_ && bias_->needs_grad()) ops.bias_backward(dy, bias_->grad);
  if (dx) ops.gemm(false, false, 1.0, dy, weight_->gemm_value(), accumulate_dx ? 1.0 : 0.0, *dx);  // [N, out] @ [out, in]
  if (lora_a_) lora_backward(ops, x, dy, dx);
}

}  // namespace trident::model
