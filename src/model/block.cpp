// Transformer block: norms, residual stream, attention and MLP in order.
#include "trident/model/block.hpp"

namespace trident::model {

namespace {
std::string block_prefix(int index) { return "blocks." + std::to_string(index); }

// The gradient reaching a branch through dropout: dres masked the same way (or dres itself).
const Tensor& through_dropout(Ops& ops, const DropoutSite& site, const Tensor& dres, Tensor& scratch) {
  if (!site.active()) return dres;
  ops.copy(dres, scratch);
  site.apply(ops, scratch);
  return scratch;
}
}  // namespace

TransformerBlock::TransformerBlock(ParamStore& store, int index, const ModelConfig& cfg, TensorParallel tp)
    : cfg_(cfg),
      tensor_parallel_(tp.size() > 1),
      norm1_(store, block_prefix(index) + ".attn_norm", cfg.hidden, cfg.arch == Arch::kGPT2, cfg.norm_eps),
      attn_(store, block_prefix(index) + ".attn", cfg, tp),
      norm2_(store, block_prefix(index) + ".mlp_norm", cfg.hidden, cfg.arch == Arch::kGPT2, cfg.norm_eps),
      mlp_(store, block_prefix(index) + ".mlp", cfg, tp) {}

BlockActivations TransformerBlock::make_activations(Ops& ops, int64_t batch, DType dtype) const {
  const int64_t rows = batch * cfg_.seq_len;
  BlockActivations a;
  a.norm1 = norm1_.make_activations(ops, rows, dtype);
  a.attn = attn_.make_activations(ops, batch, dtype);
  a.mid = ops.zeros(Shape{rows, cfg_.hidden}, dtype);
  a.norm2 = norm2_.make_activations(ops, rows, dtype);
  a.mlp = mlp_.make_activations(ops, rows, dtype);
  return a;
}

BlockScratch TransformerBlock::make_scratch(Ops& ops, int64_t batch, DType dtype) const {
  const int64_t rows = batch * cfg_.seq_len;
  BlockScratch s;
  s.dnorm = ops.zeros(Shape{rows, cfg_.hidden}, dtype);
  s.branch = ops.zeros(Shape{rows, cfg_.hidden}, dtype);
  s.attn = attn_.make_scratch(ops, batch, dtype);
  s.mlp = mlp_.make_scratch(ops, rows, dtype);
  return s;
}

void TransformerBlock::forward(Ops& ops, const Tensor& x, const Tensor& positions, BlockActivations& a, Tensor& y,
                               BlockScratch& s, const Dropout& dropout) const {
  norm1_.forward(ops, x, a.norm1);
  ops.copy(x, a.mid);
  // A branch goes through the scratch buffer when it must be complete before joining the
  // residual stream: dropout applies to it, or tensor parallelism all-reduces it.
  if (dropout.attn.active() || tensor_parallel_) {
    attn_.forward(ops, a.norm1.y, positions, a.attn, s.branch, /*accumulate=*/false);
    dropout.attn.apply(ops, s.branch);
    ops.add(a.mid, s.branch, a.mid);
  } else {
    attn_.forward(ops, a.norm1.y, positions, a.attn, a.mid, /*accumulate=*/true);
  }
  norm2_.forward(ops, a.mid, a.norm2);
  ops.copy(a.mid, y);
  if (dropout.mlp.active() || tensor_parallel_) {
    mlp_.forward(ops, a.norm2.y, a.mlp, s.branch, /*accumulate=*/false);
    dropout.mlp.apply(ops, s.branch);
    ops.add(y, s.branch, y);
  } else {
    mlp_.forward(ops, a.norm2.y, a.mlp, y, /*accumulate=*/true);
  }
}


void TransformerBlock::backward(Ops& ops, const Tensor& x, const Tensor& positions, const BlockActivations& a,
                                Tensor& dres, BlockScratch& s, const Dropout& dropout) const {
  // y = h + drop(mlp(norm2(h))): dL/dh = dres + norm2'(mlp'(drop'(dres))).
  mlp_.backward(ops, a.norm2.y, a.mlp, through_dropout(ops, dropout.mlp, dres, s.branch), s.mlp, s.dnorm);
  norm2_.backward(ops, a.mid, a.norm2, s.dnorm, dres);
  // h = x + drop(attn(norm1(x))): dL/dx = dres + norm1'(attn'(drop'(dres))).
  attn_.backward(ops, a.norm1.y, positions, a.attn, through_dropout(ops, dropout.attn, dres, s.branch), s.attn,
                 s.dnorm);
  norm1_.backward(ops, x, a.norm1, s.dnorm, dres);
}

}  // namespace trident::model
