// Embedding lookups and their scatter-add backward.
#include "trident/model/embedding.hpp"

namespace trident::model {

Embedding::Embedding(ParamStore& store, const ModelConfig& cfg) {
  tok_ = &store.add({.name = "embed.tok.weight", .global_shape = Shape{cfg.vocab, cfg.hidden}, .init = Init::kNormal,
                     .init_std = 0.02});
  if (cfg.learned_positions())
    pos_ = &store.add({.name = "embed.pos.weight", .global_shape = Shape{cfg.seq_len, cfg.hidden},
                       .init = Init::kNormal, .init_std = 0.02});
}

void Embedding::forward(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out) const {
  ops.embedding_forward(tokens, positions, tok_->value, pos_ ? pos_->value : Tensor(), out);
}

void Embedding::backward(Ops& ops, const Tensor& tokens, const Tensor& positions, const Tensor& dout) const {
  Tensor dpos = pos_ ? pos_->grad : Tensor();
  ops.embedding_backward(tokens, positions, dout, tok_->grad, dpos);
}

}  // namespace trident::model
