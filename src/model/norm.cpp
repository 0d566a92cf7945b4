// LayerNorm / RMSNorm layer over the Ops kernels.
#include "trident/model/norm.hpp"

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
  Tensor dw = weight_->grad_or_none(), db = bias_ ? bias_->grad_or_none() : Tensor();
  if (bias_) ops.layernorm_backward(dy, x, weight_->value, a.mean, a.rstd, dx, dw, db);
  else ops.rmsnorm_backward(dy, x, weight_->value, a.rstd, dx, dw);
}

std::vector<Tensor> Norm::grads() const {
  std::vector<Tensor> out{weight_->grad};
  if (bias_) out.push_back(bias_->grad);
  return out;
}

}  // namespace trident::model
