// Feed-forward layer forward and backward.
#include "trident/model/mlp.hpp"

#include <cmath>
#include <memory>

namespace trident::model {

Mlp::Mlp(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp, int ffn_hidden)
    : tp_(tp),
      ffn_((ffn_hidden > 0 ? ffn_hidden : cfg.ffn_hidden) / tp.size()),
      up_(store, prefix + ".up", cfg.hidden, ffn_ * tp.size(), cfg.has_bias(), 0.02, Split::kColumn, tp,
          cfg.lora.rank_for("up"), cfg.lora.scale()),
      down_(store, prefix + ".down", ffn_ * tp.size(), cfg.hidden, cfg.has_bias(), 0.02 / std::sqrt(2.0 * cfg.layers),
            Split::kRow, tp, cfg.lora.rank_for("down"), cfg.lora.scale()) {
  cfg.check_tensor_parallel(tp.size());
  if (cfg.gated_mlp())
    gate_ = std::make_unique<Linear>(store, prefix + ".gate", cfg.hidden, ffn_ * tp.size(), cfg.has_bias(), 0.02,
                                     Split::kColumn, tp, cfg.lora.rank_for("gate"), cfg.lora.scale());
}

MlpActivations Mlp::make_activations(Ops& ops, int64_t rows, DType dtype, std::optional<DType> stored) const {
  dtype = stored.value_or(dtype);
  MlpActivations a;
  a.up = ops.zeros(Shape{rows, ffn_}, dtype);
  if (gate_) a.gate = ops.zeros(Shape{rows, ffn_}, dtype);
  a.act = ops.zeros(Shape{rows, ffn_}, dtype);
  return a;
}

MlpScratch Mlp::make_scratch(Ops& ops, int64_t rows, DType dtype) const {
  MlpScratch s;
  s.dact = ops.zeros(Shape{rows, ffn_}, dtype);
  if (gate_) s.dgate = ops.zeros(Shape{rows, ffn_}, dtype);
  return s;
}

void Mlp::forward(Ops& ops, const Tensor& x, MlpActivations& a, Tensor& out, bool accumulate,
                  const DropoutSite& lora) const {
  up_.forward(ops, x, a.up, false, lora);
  if (gate_) {
    gate_->forward(ops, x, a.gate, false, lora);
    ops.swiglu_forward(a.gate, a.up, a.act);
  } else {
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
    gate_->backward(ops, x, s.dgate, &dx, false, lora);
    up_.backward(ops, x, s.dact, &dx, /*accumulate_dx=*/true, lora);
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
