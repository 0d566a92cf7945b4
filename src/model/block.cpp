// Transformer block: norms, residual stream, attention and MLP in order.
#include "trident/model/block.hpp"

namespace trident::model {

namespace {
std::string block_prefix(int index) { return "blocks." + std::to_string(index); }

// The layer's place among the model's MoE layers.
int moe_index(const ModelConfig& cfg, int layer) {
  int n = 0;
  for (int l = 0; l < layer; ++l) n += cfg.moe.layer(l);
  return n;
}

// The gradient reaching a branch through dropout: dres masked the same way (or dres itself).
const Tensor& through_dropout(Ops& ops, const DropoutSite& site, const Tensor& dres, Tensor& scratch) {
  if (!site.active()) return dres;
  ops.copy(dres, scratch);
  site.apply(ops, scratch);
  return scratch;
}
}  // namespace

TransformerBlock::TransformerBlock(ParamStore& store, int index, const ModelConfig& cfg, TensorParallel tp,
                                   ExpertParallel ep, BlockParts parts)
    : cfg_(cfg), tp_(tp) {
  // Parameters in forward order: the attention half's, then the MLP half's.
  if (parts != BlockParts::kMlp) {
    norm1_.emplace(store, block_prefix(index) + ".attn_norm", cfg.hidden, cfg.arch == Arch::kGPT2, cfg.norm_eps);
    attn_.emplace(store, block_prefix(index) + ".attn", cfg, tp, index);
  }
  if (parts == BlockParts::kAttention) return;
  norm2_.emplace(store, block_prefix(index) + ".mlp_norm", cfg.hidden, cfg.arch == Arch::kGPT2, cfg.norm_eps);
  if (cfg.moe.layer(index))
    moe_ = std::make_unique<MoeLayer>(store, block_prefix(index) + ".moe", cfg, tp, moe_index(cfg, index), ep);
  else
    mlp_ = std::make_unique<Mlp>(store, block_prefix(index) + ".mlp", cfg, tp);
}

BlockActivations TransformerBlock::make_activations(Ops& ops, int64_t batch, DType dtype, bool attention,
                                                    std::optional<DType> stored) const {
  const int64_t rows = batch * cfg_.seq_len, local = tp_.local_rows(rows);
  BlockActivations a;
  if (attn_) {
    a.norm1 = norm1_->make_activations(ops, local, dtype, stored);
    if (attention) a.attn = attn_->make_activations(ops, batch, dtype, stored);
  }
  if (attn_ && has_mlp()) a.mid = ops.zeros(Shape{local, cfg_.hidden}, dtype);
  if (has_mlp()) a.norm2 = norm2_->make_activations(ops, local, dtype, stored);
  if (mlp_) a.mlp = mlp_->make_activations(ops, rows, dtype, stored);
  if (moe_) a.moe = moe_->make_activations(ops, rows, dtype, stored);
  return a;
}

BlockScratch TransformerBlock::make_scratch(Ops& ops, int64_t batch, DType dtype, std::optional<DType> stored,
                                            std::optional<DType> gradients) const {
  const int64_t rows = batch * cfg_.seq_len, local = tp_.local_rows(rows);
  BlockScratch s;
  if (tp_.splits_rows()) s.gathered = ops.zeros(Shape{rows, cfg_.hidden}, stored.value_or(dtype));
  s.partial = ops.zeros(Shape{rows, cfg_.hidden}, dtype);
  s.dnorm = ops.zeros(Shape{rows, cfg_.hidden}, dtype);
  s.dnorm_rows = tp_.splits_rows() ? ops.zeros(Shape{local, cfg_.hidden}, dtype) : s.dnorm;
  s.branch = tp_.splits_rows() ? ops.zeros(Shape{local, cfg_.hidden}, dtype) : s.partial;
  if (gradients && *gradients != dtype && (attn_ || mlp_))
    s.dbranch_low = ops.zeros(Shape{rows, cfg_.hidden}, *gradients);
  // The branches' internal gradients in the GEMMs' 16-bit dtype (as autocast keeps them): each
  // is rounded once where it is made, and the GEMMs and the tensor-core attention backward read
  // it as it is; the residual stream's stay fp32. GEMMs computing in fp32 read them in fp32.
  const DType branch = gradients.value_or(dtype);
  if (attn_) s.attn = attn_->make_scratch(ops, batch, branch);
  if (mlp_) s.mlp = mlp_->make_scratch(ops, rows, branch);
  if (moe_) s.moe = moe_->make_scratch(ops, rows, dtype);
  return s;
}

void TransformerBlock::forward(Ops& ops, const Tensor& x, const TokenPositions& positions, BlockActivations& a, Tensor& y,
                               BlockScratch& s, const Dropout& dropout, const MoeStep& moe) const {
  if (!has_mlp()) return forward_attention(ops, x, positions, a, y, s, dropout);
  if (!attn_) return forward_mlp(ops, x, a, y, s, dropout, moe);
  forward_attention(ops, x, positions, a, a.mid, s, dropout);
  forward_mlp(ops, a.mid, a, y, s, dropout, moe);
}

// A branch goes through the scratch buffers when it must be complete before joining the
// residual stream: tensor parallelism sums it over the group, or dropout applies to it.
// Otherwise its output projection adds straight onto the residual stream.
void TransformerBlock::forward_attention(Ops& ops, const Tensor& x, const TokenPositions& positions,
                                         BlockActivations& a, Tensor& h, BlockScratch& s,
                                         const Dropout& dropout) const {
  const bool tensor_parallel = tp_.size() > 1;
  norm1_->forward(ops, x, a.norm1);
  const Tensor& attn_in = tp_.gather_rows(ops, a.norm1.y, s.gathered);
  ops.copy(x, h);
  if (tensor_parallel || dropout.attn.active()) {
    attn_->forward(ops, attn_in, positions, a.attn, s.partial, /*accumulate=*/false, dropout.lora);
    Tensor& out = tensor_parallel ? attn_->finish_output(ops, s.partial, s.branch) : s.partial;
    dropout.attn.apply(ops, out);
    ops.add(h, out, h);
  } else {
    attn_->forward(ops, attn_in, positions, a.attn, h, /*accumulate=*/true, dropout.lora);
  }
}

void TransformerBlock::forward_mlp(Ops& ops, const Tensor& h, BlockActivations& a, Tensor& y, BlockScratch& s,
                                   const Dropout& dropout, const MoeStep& moe) const {
  const bool tensor_parallel = tp_.size() > 1;
  norm2_->forward(ops, h, a.norm2);
  const Tensor& mlp_in = tp_.gather_rows(ops, a.norm2.y, s.gathered);
  ops.copy(h, y);
  if (tensor_parallel || dropout.mlp.active()) {
    if (mlp_) mlp_->forward(ops, mlp_in, a.mlp, s.partial, /*accumulate=*/false, dropout.lora);
    else moe_->forward(ops, mlp_in, a.moe, s.partial, /*accumulate=*/false, moe);
    Tensor& out = !tensor_parallel ? s.partial
                  : mlp_          ? mlp_->finish_output(ops, s.partial, s.branch)
                                  : moe_->finish_output(s.partial, s.branch);
    dropout.mlp.apply(ops, out);
    ops.add(y, out, y);
  } else if (mlp_) {
    mlp_->forward(ops, mlp_in, a.mlp, y, /*accumulate=*/true, dropout.lora);
  } else {
    moe_->forward(ops, mlp_in, a.moe, y, /*accumulate=*/true, moe);
  }
}

namespace {
// A branch's output gradient as its output projection's two GEMMs (weight and input gradients)
// read it: rounded to 16 bits once into `low` under mixed precision, as autocast keeps it; else d.
Tensor rounded_once(Ops& ops, const Tensor& d, const Tensor& low) {
  if (!low.defined()) return d;
  Tensor out = low.flat().narrow(0, d.numel()).view(d.shape());
  ops.copy(d, out);
  return out;
}
}  // namespace

void TransformerBlock::backward(Ops& ops, const Tensor& x, const TokenPositions& positions, const BlockActivations& a,
                                Tensor& dres, BlockScratch& s, const Dropout& dropout) const {
  if (has_mlp()) backward_mlp(ops, attn_ ? a.mid : x, a, dres, s, dropout);
  if (attn_) backward_attention(ops, x, positions, a, dres, s, dropout);
}

void TransformerBlock::backward_mlp(Ops& ops, const Tensor& h, const BlockActivations& a, Tensor& dres,
                                    BlockScratch& s, const Dropout& dropout) const {
  // y = h + drop(mlp(norm2(h))): dL/dh = dres + norm2'(mlp'(drop'(dres))). Under sequence
  // parallelism the branch sees all rows: gather the gradient and the norm output (kept as
  // this rank's rows only), and reduce-scatter d(norm output) back to rows.
  const Tensor& dmlp = tp_.gather_rows(ops, through_dropout(ops, dropout.mlp, dres, s.branch), s.partial);
  const Tensor& mlp_in = tp_.gather_rows(ops, a.norm2.y, s.gathered);
  if (mlp_) mlp_->backward(ops, mlp_in, a.mlp, rounded_once(ops, dmlp, s.dbranch_low), s.mlp, s.dnorm, dropout.lora);
  else moe_->backward(ops, mlp_in, a.moe, dmlp, s.moe, s.dnorm);
  norm2_->backward(ops, h, a.norm2, tp_.reduce_to_rows(s.dnorm, s.dnorm_rows), dres);
}

void TransformerBlock::backward_attention(Ops& ops, const Tensor& x, const TokenPositions& positions,
                                          const BlockActivations& a, Tensor& dres, BlockScratch& s,
                                          const Dropout& dropout) const {
  // h = x + drop(attn(norm1(x))): dL/dx = dres + norm1'(attn'(drop'(dres))).
  const Tensor& dattn = tp_.gather_rows(ops, through_dropout(ops, dropout.attn, dres, s.branch), s.partial);
  const Tensor& attn_in = tp_.gather_rows(ops, a.norm1.y, s.gathered);
  attn_->backward(ops, attn_in, positions, a.attn, rounded_once(ops, dattn, s.dbranch_low), s.attn, s.dnorm,
                  dropout.lora);
  norm1_->backward(ops, x, a.norm1, tp_.reduce_to_rows(s.dnorm, s.dnorm_rows), dres);
}

void TransformerBlock::recompute_attention(Ops& ops, const TokenPositions& positions, BlockActivations& a,
                                           BlockScratch& s, const DropoutSite& lora) const {
  if (!attn_) return;
  attn_->recompute(ops, tp_.gather_rows(ops, a.norm1.y, s.gathered), positions, a.attn, lora);
}

DecodeScratch DecodeScratch::rows(int64_t n) const {
  auto cut = [n](const Tensor& t) { return t.defined() ? t.narrow(0, n) : t; };
  // The per-head norm statistics, one per (row, head).
  auto cut_heads = [n](const Tensor& t, const Tensor& rows) {
    return t.defined() ? t.narrow(0, n * (t.dim(0) / rows.dim(0))) : t;
  };
  DecodeScratch s;
  s.norm = {cut(norm.y), cut(norm.mean), cut(norm.rstd)};
  s.attn = {cut(attn.q), cut(attn.k), cut(attn.v), cut(attn.out), cut(attn.q_raw), cut(attn.k_raw),
            cut_heads(attn.q_rstd, attn.q), cut_heads(attn.k_rstd, attn.k), attn.lse};
  s.mlp = {cut(mlp.up), cut(mlp.gate), cut(mlp.act)};
  s.moe = moe.logits.defined() ? moe.prefix(n, norm.y.dim(0)) : moe;
  s.branch = cut(branch);
  return s;
}

DecodeScratch TransformerBlock::make_decode_scratch(Ops& ops, int64_t rows, DType dtype) const {
  DecodeScratch s;
  s.norm = (norm1_ ? *norm1_ : *norm2_).make_activations(ops, rows, dtype);
  if (attn_) s.attn = attn_->make_decode_scratch(ops, rows, dtype);
  if (mlp_) s.mlp = mlp_->make_activations(ops, rows, dtype);
  if (moe_) s.moe = moe_->make_activations(ops, rows, dtype);
  s.branch = ops.zeros(Shape{rows, cfg_.hidden}, dtype);
  return s;
}

void TransformerBlock::decode(Ops& ops, Tensor& x, const Tensor& positions, const Tensor& start, KvCache& cache,
                              DecodeScratch& s) const {
  if (attn_) {
    norm1_->forward(ops, x, s.norm);
    attn_->decode(ops, s.norm.y, positions, start, cache, s.attn, s.branch);
    ops.add(x, s.branch, x);
  }
  if (!has_mlp()) return;
  norm2_->forward(ops, x, s.norm);
  if (mlp_) mlp_->decode(ops, s.norm.y, s.mlp, s.branch);
  else moe_->decode(ops, s.norm.y, s.moe, s.branch);
  ops.add(x, s.branch, x);
}

std::vector<Tensor> TransformerBlock::tp_partial_grads() const {
  std::vector<Tensor> out = head_norm_grads();
  if (moe_)
    for (const Tensor& g : moe_->replicated_grads()) out.push_back(g);
  return out;
}

std::vector<Tensor> TransformerBlock::norm_grads() const {
  std::vector<Tensor> out;
  for (const std::optional<Norm>* norm : {&norm1_, &norm2_})
    if (*norm)
      for (const Tensor& t : (*norm)->grads()) out.push_back(t);
  return out;
}

void overlay(BlockActivations& into, const BlockActivations& from) {
  if (from.norm1.y.defined()) into.norm1 = from.norm1;
  if (from.attn.q.defined()) into.attn = from.attn;
  if (from.mid.defined()) into.mid = from.mid;
  if (from.norm2.y.defined()) into.norm2 = from.norm2;
  if (from.mlp.act.defined()) into.mlp = from.mlp;
  if (from.moe.logits.defined()) into.moe = from.moe;
}

void overlay(BlockScratch& into, const BlockScratch& from) {
  if (!into.partial.defined()) {  // the parts every block has
    into.gathered = from.gathered;
    into.partial = from.partial;
    into.dnorm = from.dnorm;
    into.dnorm_rows = from.dnorm_rows;
    into.branch = from.branch;
  }
  if (from.dbranch_low.defined()) into.dbranch_low = from.dbranch_low;
  if (from.attn.dout.defined()) into.attn = from.attn;
  if (from.mlp.dact.defined()) into.mlp = from.mlp;
  if (from.moe.dlogits.defined()) into.moe = from.moe;
}

void overlay(DecodeScratch& into, const DecodeScratch& from) {
  if (!into.branch.defined()) {
    into.norm = from.norm;
    into.branch = from.branch;
  }
  if (from.attn.q.defined()) into.attn = from.attn;
  if (from.mlp.act.defined()) into.mlp = from.mlp;
  if (from.moe.logits.defined()) into.moe = from.moe;
}

}  // namespace trident::model
