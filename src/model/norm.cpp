// LayerNorm / RMSNorm layer over the Ops kernels.
#include "trident/model/norm.hpp"

#include "trident/model/unit_gradients.hpp"

namespace trident::model {

Norm::Norm(ParamStore& store, const std::string& name, int hidden, bool layernorm, double eps)
    : hidden_(hidden), eps_(eps) {
  weight_ = &store.add({.name = name + ".weight", .global_shape = Shape{hidden}, .init = Init::kOnes});
  if (layernorm) bias_ = &store.add({.name = name + ".bias", .global_shape = Shape{hidden}, .init = Init::kZeros});
}

NormActivations Norm::make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored) const {
  NormActivations a;
  a.y = ops.zeros(Shape{rows, hidden_}, stored.value_or(dtype));
  if (bias_) a.mean = ops.zeros(Shape{rows}, dtype);
  a.rstd = ops.zeros(Shape{rows}, dtype);
  return a;
}

void Norm::forward(Ops& ops, const Tensor& x, NormActivations& a) const {
  if (bias_) ops.layernorm_forward(x, weight_->value, bias_->value, eps_, a.y, a.mean, a.rstd);
  else ops.rmsnorm_forward(x, weight_->value, eps_, a.y, a.rstd);
}

void Norm::backward(Ops& ops, const Tensor& x, const NormActivations& a, const Tensor& dy, Tensor& dx) const {
  UnitGradients* units = weight_->per_unit ? weight_->per_unit : bias_ ? bias_->per_unit : nullptr;
  if (units) unit_squares(ops, x, a, dy, *units);
  Tensor dw = units ? Tensor() : weight_->grad_or_none(), db = bias_ && !units ? bias_->grad_or_none() : Tensor();
  if (bias_) ops.layernorm_backward(dy, x, weight_->value, a.mean, a.rstd, dx, dw, db);
  else ops.rmsnorm_backward(dy, x, weight_->value, a.rstd, dx, dw);
}

void Norm::unit_squares(Ops& ops, const Tensor& x, const NormActivations& a, const Tensor& dy,
                        UnitGradients& units) const {
  // Each unit's rows through the norm's own backward, into scratch gradients.
  const DType dtype = weight_->grad.dtype();
  Tensor dw = units.scratch(ops, 5, Shape{hidden_}, dtype), db = units.scratch(ops, 6, Shape{hidden_}, dtype);
  const auto rows = [](const Tensor& t) { return t.view(Shape{t.numel() / t.dim(-1), t.dim(-1)}); };
  const Tensor dy_rows = rows(dy), x_rows = rows(x), mean = a.mean.defined() ? a.mean.flat() : Tensor(),
               rstd = a.rstd.flat();
  for (const data::UnitSpan& s : units.spans()) {
    if (s.count == 0) continue;
    const int64_t b = s.begin, e = s.begin + s.count;
    Tensor dx = units.scratch(ops, 7, Shape{s.count, hidden_}, dtype);
    ops.fill(dw, 0.0);
    Tensor want_w = weight_->per_unit ? dw : Tensor();
    if (bias_) {
      ops.fill(db, 0.0);
      Tensor want_b = bias_->per_unit ? db : Tensor();
      ops.layernorm_backward(dy_rows.narrow(b, e), x_rows.narrow(b, e), weight_->value, mean.narrow(b, e),
                             rstd.narrow(b, e), dx, want_w, want_b);
      if (bias_->per_unit) units.add(*bias_, s.unit, ops.sum_squares(db));
    } else {
      ops.rmsnorm_backward(dy_rows.narrow(b, e), x_rows.narrow(b, e), weight_->value, rstd.narrow(b, e), dx, want_w);
    }
    if (weight_->per_unit) units.add(*weight_, s.unit, ops.sum_squares(dw));
  }
}

std::vector<Tensor> Norm::grads() const {
  std::vector<Tensor> out{weight_->grad};
  if (bias_) out.push_back(bias_->grad);
  return out;
}

}  // namespace trident::model
