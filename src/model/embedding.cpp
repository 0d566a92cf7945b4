// Embedding lookups and their scatter-add backward.
#include "trident/model/embedding.hpp"

namespace trident::model {

Parameter& Embedding::add_token_weight(ParamStore& store, const ModelConfig& cfg, TensorParallel tp) {
  return store.add({.name = "embed.tok.weight", .global_shape = Shape{cfg.padded_vocab(tp.size()), cfg.hidden},
                    .init = Init::kNormal, .init_std = 0.02, .split_dim = tp.size() > 1 ? 0 : -1,
                    .split_parts = tp.size(), .split_index = tp.rank(), .init_rows = cfg.vocab});
}

Embedding::Embedding(ParamStore& store, const ModelConfig& cfg, TensorParallel tp) : tp_(tp) {
  vocab_offset_ = int64_t(cfg.padded_vocab(tp.size()) / tp.size()) * tp.rank();
  tok_ = &add_token_weight(store, cfg, tp);
  if (cfg.learned_positions())
    pos_ = &store.add({.name = "embed.pos.weight", .global_shape = Shape{cfg.seq_len, cfg.hidden},
                       .init = Init::kNormal, .init_std = 0.02});
}

void Embedding::forward(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out) const {
  // The replicated position rows are added by one rank only: the all-reduce sums the shards.
  const bool add_positions = pos_ && tp_.rank() == 0;
  ops.embedding_forward(tokens, positions, tok_->value, add_positions ? pos_->value : Tensor(), vocab_offset_, out);
  tp_.all_reduce(out);
}

void Embedding::backward(Ops& ops, const Tensor& tokens, const Tensor& positions, const Tensor& dout) const {
  // dout is whole on every rank, so the replicated position gradient is the same on all ranks.
  Tensor dpos = pos_ ? pos_->grad : Tensor();
  ops.embedding_backward(tokens, positions, dout, vocab_offset_, tok_->grad, dpos);
}

}  // namespace trident::model
