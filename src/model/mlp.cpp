// Feed-forward layer forward and backward.
#include "trident/model/mlp.hpp"

#include <array>
#include <cmath>
#include <memory>

namespace trident::model {

namespace {
// SwiGLU's gate and up weights side by side in the flat buffers (their biases and adapters
// after), so that both projections can run as one batched GEMM; none for GELU.
std::array<Parameter*, 2> add_gate_up_weights(ParamStore& store, const std::string& prefix, const ModelConfig& cfg,
                                              TensorParallel tp, int ffn) {
  if (!cfg.gated_mlp()) return {nullptr, nullptr};
  return {&Linear::add_weight(store, prefix + ".gate", cfg.hidden, ffn, 0.02, Split::kColumn, tp),
          &Linear::add_weight(store, prefix + ".up", cfg.hidden, ffn, 0.02, Split::kColumn, tp)};
}
}  // namespace

Mlp::Mlp(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp, int ffn_hidden)
    : tp_(tp),
      ffn_((ffn_hidden > 0 ? ffn_hidden : cfg.ffn_hidden) / tp.size()),
      gate_up_weights_(add_gate_up_weights(store, prefix, cfg, tp, ffn_ * tp.size())),
      up_(store, prefix + ".up", cfg.hidden, ffn_ * tp.size(), cfg.has_bias(), 0.02, Split::kColumn, tp,
          cfg.lora.rank_for("up"), cfg.lora.scale(), gate_up_weights_[1]),
      down_(store, prefix + ".down", ffn_ * tp.size(), cfg.hidden, cfg.has_bias(), 0.02 / std::sqrt(2.0 * cfg.layers),
            Split::kRow, tp, cfg.lora.rank_for("down"), cfg.lora.scale()) {
  cfg.check_tensor_parallel(tp.size());
  if (cfg.gated_mlp())
    gate_ = std::make_unique<Linear>(store, prefix + ".gate", cfg.hidden, ffn_ * tp.size(), cfg.has_bias(), 0.02,
                                     Split::kColumn, tp, cfg.lora.rank_for("gate"), cfg.lora.scale(),
                                     gate_up_weights_[0]);
}

MlpActivations Mlp::make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored) const {
  dtype = stored.value_or(dtype);
  MlpActivations a;
  if (gate_) {  // side by side: one batched GEMM writes both
    const std::vector<Tensor> parts = Linear::zeros_side_by_side(ops, {Shape{rows, ffn_}, Shape{rows, ffn_}}, dtype);
    a.gate = parts[0], a.up = parts[1];
  } else {
    a.up = ops.zeros(Shape{rows, ffn_}, dtype);
  }
  a.act = ops.zeros(Shape{rows, ffn_}, dtype);
  return a;
}

MlpScratch Mlp::make_scratch(Ops& ops, int64_t rows, DType dtype) const {
  MlpScratch s;
  if (gate_) {  // dgate and dup (in dact) side by side: batched weight gradients
    const std::vector<Tensor> parts = Linear::zeros_side_by_side(ops, {Shape{rows, ffn_}, Shape{rows, ffn_}}, dtype);
    s.dgate = parts[0], s.dact = parts[1];
  } else {
    s.dact = ops.zeros(Shape{rows, ffn_}, dtype);
  }
  return s;
}

void Mlp::forward(Ops& ops, const Tensor& x, MlpActivations& a, Tensor& out, bool accumulate,
                  const DropoutSite& lora) const {
  if (gate_) {
    Linear::forward_parts(ops, {gate_.get(), &up_}, x, {a.gate, a.up}, lora);
    ops.swiglu_forward(a.gate, a.up, a.act);
  } else if (const Parameter* bias = up_.bias()) {  // GPT-2: the bias joins GELU's pass
    up_.forward(ops, x, a.up, false, lora, /*with_bias=*/false);
    ops.bias_gelu_forward(a.up, bias->value, a.act);
  } else {
    up_.forward(ops, x, a.up, false, lora);
    ops.gelu_forward(a.up, a.act);
  }
  down_.forward(ops, a.act, out, accumulate, lora);
}

void Mlp::backward(Ops& ops, const Tensor& x, const MlpActivations& a, const Tensor& dout, MlpScratch& s,
                   Tensor& dx, const DropoutSite& lora) const {
  down_.backward(ops, a.act, dout, &s.dact, false, lora);
  if (gate_) {
    // dact -> (dgate, dup); dup reuses dact's buffer once both are computed by the kernel.
    ops.swiglu_backward(a.gate, a.up, s.dact, s.dgate, s.dact);
    Linear::backward_parts(ops, {gate_.get(), &up_}, x, {s.dgate, s.dact}, &dx, lora);
  } else if (Parameter* bias = up_.bias(); bias && bias->needs_grad() && !bias->per_unit) {
    ops.gelu_bias_backward(a.up, s.dact, s.dact, bias->grad);  // the bias gradient in GELU's pass
    up_.backward(ops, x, s.dact, &dx, false, lora, /*with_bias=*/false);
  } else {
    ops.gelu_backward(a.up, s.dact, s.dact);
    up_.backward(ops, x, s.dact, &dx, false, lora);
  }
}

void Mlp::decode(Ops& ops, const Tensor& x, MlpActivations& a, Tensor& out) const {
  forward(ops, x, a, out, /*accumulate=*/false);
  if (tp_.size() > 1) {
    tp_.all_reduce(out);
    down_.add_bias(ops, out);
  }
}

Tensor& Mlp::finish_output(Ops& ops, Tensor& partial, Tensor& rows) const {
  Tensor& out = tp_.reduce_to_rows(partial, rows);
  down_.add_bias(ops, out);
  return out;
}

}  // namespace trident::model
