// Linear forward and backward as GEMMs on the Ops backend.
#include "trident/model/linear.hpp"

#include <cmath>

#include "trident/core/rng.hpp"
#include "trident/model/unit_gradients.hpp"

namespace trident::model {

Parameter& Linear::add_weight(ParamStore& store, const std::string& name, int in, int out, double init_std,
                              Split split, TensorParallel tp) {
  split = tp.size() > 1 ? split : Split::kNone;
  const int weight_split = split == Split::kColumn ? 0 : split == Split::kRow ? 1 : -1;
  return store.add({.name = name + ".weight", .global_shape = Shape{out, in}, .init = Init::kNormal,
                    .init_std = init_std, .weight_decay = true, .split_dim = weight_split,
                    .split_parts = tp.size(), .split_index = tp.rank()});
}

Linear::Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std, Split split,
               TensorParallel tp, int lora_rank, double lora_scale, Parameter* weight)
    : split_(tp.size() > 1 ? split : Split::kNone),
      tp_(tp),
      lora_scale_(lora_scale),
      lora_key_(rng_key(0, name)),
      in_(in),
      in_first_(split_ == Split::kRow ? int64_t(in / tp.size()) * tp.rank() : 0) {
  weight_ = weight ? weight : &add_weight(store, name, in, out, init_std, split, tp);
  TRIDENT_CHECK(weight_->spec.name == name + ".weight", "Linear ", name, " given the weight ", weight_->spec.name);
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

void Linear::forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate, const DropoutSite& lora_dropout,
                     bool with_bias) const {
  TRIDENT_CHECK(split_ != Split::kRow || !accumulate, "a row-parallel output is partial until summed over the group");
  ops.gemm(false, true, 1.0, x, weight_->gemm_value(), accumulate ? 1.0 : 0.0, y);
  // A row-parallel output is a partial sum: its bias joins once the group has summed it (add_bias).
  finish_forward(ops, x, y, lora_dropout, with_bias && split_ != Split::kRow);
}

void Linear::finish_forward(Ops& ops, const Tensor& x, Tensor& y, const DropoutSite& lora_dropout,
                            bool with_bias) const {
  if (bias_ && with_bias) ops.add_bias(y, bias_->value);
  if (lora_a_) lora_forward(ops, x, y, lora_dropout);
}

void Linear::bias_backward(Ops& ops, const Tensor& dy) const {
  if (!bias_) return;
  if (bias_->per_unit) bias_->per_unit->add_column_sums(ops, *bias_, dy);
  else if (bias_->needs_grad()) ops.bias_backward(dy, bias_->grad);
}

Tensor Linear::lora_rows(Ops& ops, Tensor& buffer, int64_t rows) const {
  const int64_t r = lora_a_->local_shape[0];
  if (!buffer.defined() || buffer.dim(0) < rows) buffer = ops.zeros(Shape{rows, r}, lora_a_->value.dtype());
  return buffer.narrow(0, rows);
}

namespace {
// buffer's first `rows x width` elements as a matrix, the buffer (re)made when too small.
Tensor scratch_rows(Ops& ops, Tensor& buffer, int64_t rows, int64_t width, DType dtype) {
  if (!buffer.defined() || buffer.numel() < rows * width || buffer.dtype() != dtype)
    buffer = ops.zeros(Shape{rows * width}, dtype);
  return buffer.narrow(0, rows * width).view(Shape{rows, width});
}
}  // namespace

Tensor Linear::lora_input(Ops& ops, const Tensor& x, const DropoutSite& d) const {
  if (!d.active()) return x;
  TRIDENT_CHECK(d.lora_scratch, "LoRA dropout without the model's scratch");
  const int64_t width = x.dim(-1), rows = x.numel() / width;
  Tensor masked = scratch_rows(ops, d.lora_scratch->masked_input, rows, width, lora_a_->value.dtype());
  ops.copy(x, masked);
  lora_mask(ops, masked, d);
  return masked;
}

void Linear::lora_mask(Ops& ops, Tensor& t, const DropoutSite& d) const {
  // Element (row, column) of the whole input has global index (first row + row) * in + column.
  const uint64_t key = d.key ^ lora_key_;
  const int64_t width = t.dim(-1), rows = t.numel() / width;
  if (width == in_) {
    ops.dropout(t, d.p, key, d.stream, d.first_index * in_);
    return;
  }
  Tensor by_row = t.view(Shape{rows, width});
  for (int64_t r = 0; r < rows; ++r) {  // a row-parallel shard: this rank's columns of each row
    Tensor row = by_row.narrow(r, r + 1);
    ops.dropout(row, d.p, key, d.stream, (d.first_index + r) * in_ + in_first_);
  }
}

void Linear::lora_forward(Ops& ops, const Tensor& x_in, Tensor& y, const DropoutSite& d) const {
  const Tensor x = lora_input(ops, x_in, d);
  Tensor h = lora_rows(ops, lora_h_, x.numel() / x.dim(-1));
  ops.gemm(false, true, 1.0, x, lora_a_->gemm_value(), 0.0, h);  // h = x A^T
  if (split_ == Split::kRow) {
    tp_.all_reduce(h);
    if (tp_.rank() != 0) return;
  }
  ops.gemm(false, true, lora_scale_, h, lora_b_->gemm_value(), 1.0, y);  // y += s h B^T
}

void Linear::lora_backward(Ops& ops, const Tensor& x_in, const Tensor& dy, Tensor* dx, const DropoutSite& d) const {
  const Tensor x = lora_input(ops, x_in, d);
  const int64_t rows = x.numel() / x.dim(-1);
  Tensor h = lora_rows(ops, lora_h_, rows), dh = lora_rows(ops, lora_dh_, rows);
  ops.gemm(false, true, 1.0, x, lora_a_->gemm_value(), 0.0, h);
  if (split_ == Split::kRow) tp_.all_reduce(h);
  if (lora_b_->per_unit) lora_b_->per_unit->add_outer(ops, *lora_b_, dy, h, lora_scale_);
  else ops.gemm(true, false, lora_scale_, dy, h, 1.0, lora_b_->grad);       // dB += s dy^T h
  ops.gemm(false, false, lora_scale_, dy, lora_b_->gemm_value(), 0.0, dh);  // dh = s dy B
  if (split_ == Split::kColumn) tp_.all_reduce(dh);  // each rank held some output columns
  if (lora_a_->per_unit) lora_a_->per_unit->add_outer(ops, *lora_a_, dh, x);
  else ops.gemm(true, false, 1.0, dh, x, 1.0, lora_a_->grad);                // dA += dh^T x
  if (!dx || (split_ == Split::kColumn && tp_.rank() != 0)) return;
  if (!d.active()) {
    ops.gemm(false, false, 1.0, dh, lora_a_->gemm_value(), 1.0, *dx);  // dx += dh A
    return;
  }
  // Through the mask: dx += mask(dh A).
  const int64_t width = x.dim(-1);
  Tensor through = scratch_rows(ops, d.lora_scratch->masked_grad, rows, width, lora_a_->value.dtype());
  ops.gemm(false, false, 1.0, dh, lora_a_->gemm_value(), 0.0, through);
  lora_mask(ops, through, d);
  Tensor dx_rows = dx->view(Shape{rows, width});
  ops.add(dx_rows, through, dx_rows);
}

namespace {
// Neighbouring parts with equal weight shapes: [first, end) index ranges.
std::vector<std::pair<size_t, size_t>> equal_shape_groups(const std::vector<const Linear*>& parts) {
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!groups.empty() && parts[i]->weight().local_shape == parts[groups.back().first]->weight().local_shape)
      groups.back().second = i + 1;
    else
      groups.emplace_back(i, i + 1);
  }
  return groups;
}
}  // namespace

std::vector<Tensor> Linear::zeros_side_by_side(Ops& ops, const std::vector<Shape>& shapes, DType dtype) {
  int64_t total = 0;
  for (const Shape& s : shapes) total += s.numel();
  const Tensor all = ops.zeros(Shape{total}, dtype);
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (const Shape& s : shapes) {
    parts.push_back(all.narrow(at, at + s.numel()).view(s));
    at += s.numel();
  }
  return parts;
}

void Linear::forward_parts(Ops& ops, const std::vector<const Linear*>& parts, const Tensor& x,
                           const std::vector<Tensor>& ys, const DropoutSite& lora_dropout) {
  TRIDENT_CHECK(parts.size() == ys.size(), "forward_parts: ", parts.size(), " parts, ", ys.size(), " outputs");
  for (const auto& [first, end] : equal_shape_groups(parts)) {
    std::vector<Tensor> weights, outputs;
    for (size_t i = first; i < end; ++i) {
      TRIDENT_CHECK(parts[i]->split_ != Split::kRow, "forward_parts: ", parts[i]->weight_->spec.name, " is row-parallel");
      weights.push_back(parts[i]->weight_->gemm_value());
      outputs.push_back(ys[i]);
    }
    ops.gemm_parts(false, true, 1.0, {x}, weights, 0.0, outputs);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    Tensor y = ys[i];
    parts[i]->finish_forward(ops, x, y, lora_dropout, /*with_bias=*/true);
  }
}

void Linear::backward_parts(Ops& ops, const std::vector<const Linear*>& parts, const Tensor& x,
                            const std::vector<Tensor>& dys, Tensor* dx, const DropoutSite& lora_dropout) {
  TRIDENT_CHECK(parts.size() == dys.size(), "backward_parts: ", parts.size(), " parts, ", dys.size(), " gradients");
  // Weight gradients: dW += dy^T x, batched over a group whose weights all accumulate plainly.
  for (const auto& [first, end] : equal_shape_groups(parts)) {
    std::vector<Tensor> dy_parts, grads;
    for (size_t i = first; i < end; ++i) {
      const Parameter& w = *parts[i]->weight_;
      if (w.per_unit) w.per_unit->add_outer(ops, w, dys[i], x);
      else if (w.needs_grad()) dy_parts.push_back(dys[i]), grads.push_back(w.grad);
    }
    if (!grads.empty()) ops.gemm_parts(true, false, 1.0, dy_parts, {x}, 1.0, grads);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const Linear& p = *parts[i];
    p.bias_backward(ops, dys[i]);
    if (dx) ops.gemm(false, false, 1.0, dys[i], p.weight_->gemm_value(), i > 0 ? 1.0 : 0.0, *dx);
    if (p.lora_a_) p.lora_backward(ops, x, dys[i], dx, lora_dropout);
  }
}

void Linear::add_bias(Ops& ops, Tensor& y) const {
  if (bias_) ops.add_bias(y, bias_->value);
}

void Linear::backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx,
                      const DropoutSite& lora_dropout, bool with_bias) const {
  if (UnitGradients* units = weight_->per_unit) units->add_outer(ops, *weight_, dy, x);
  else if (weight_->needs_grad()) ops.gemm(true, false, 1.0, dy, x, 1.0, weight_->grad);  // [out, N] @ [N, in]
  if (with_bias) bias_backward(ops, dy);
  if (dx) ops.gemm(false, false, 1.0, dy, weight_->gemm_value(), accumulate_dx ? 1.0 : 0.0, *dx);  // [N, out] @ [out, in]
  if (lora_a_) lora_backward(ops, x, dy, dx, lora_dropout);
}

}  // namespace trident::model
