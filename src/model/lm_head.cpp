// Output head: final norm, vocabulary projection, fused cross-entropy and their backward.
#include "trident/model/lm_head.hpp"

namespace trident::model {

LMHead::LMHead(ParamStore& store, const ModelConfig& cfg, Parameter* tied)
    : norm_(store, "final_norm", cfg.hidden, cfg.arch == Arch::kGPT2, cfg.norm_eps) {
  weight_ = tied ? tied
                 : &store.add({.name = "head.weight", .global_shape = Shape{cfg.vocab, cfg.hidden},
                               .init = Init::kNormal, .init_std = 0.02, .weight_decay = true});
}

HeadBuffers LMHead::make_buffers(Ops& ops, int64_t rows, DType dtype) const {
  HeadBuffers b;
  b.norm = norm_.make_activations(ops, rows, dtype);
  b.logits = ops.zeros(Shape{rows, weight_->local_shape[0]}, dtype);
  b.losses = ops.zeros(Shape{rows}, dtype);
  b.host_losses = Tensor::zeros(Shape{rows}, DType::kF64);
  return b;
}

void LMHead::forward(Ops& ops, const Tensor& x, HeadBuffers& b) const {
  norm_.forward(ops, x, b.norm);
  ops.gemm(false, true, 1.0, b.norm.y, weight_->value, 0.0, b.logits);
}

double LMHead::loss_backward(Ops& ops, const Tensor& x, const Tensor& targets, double grad_scale,
                             HeadBuffers& b, Tensor& dx) const {
  ops.cross_entropy_forward_backward(b.logits, targets, grad_scale, b.losses, b.logits);
  ops.copy(b.losses, b.host_losses);
  double loss_sum = 0;
  const double* l = b.host_losses.data<double>();
  for (int64_t i = 0; i < b.host_losses.numel(); ++i) loss_sum += l[i];

  const Tensor& dlogits = b.logits;
  ops.gemm(true, false, 1.0, dlogits, b.norm.y, 1.0, weight_->grad);  // [V, N] @ [N, C]
  Tensor& dnorm = b.norm.y;  // the normalised input is no longer needed: reuse it for its gradient
  ops.gemm(false, false, 1.0, dlogits, weight_->value, 0.0, dnorm);
  ops.fill(dx, 0.0);
  norm_.backward(ops, x, b.norm, dnorm, dx);
  return loss_sum;
}

}  // namespace trident::model
