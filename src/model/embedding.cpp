// Embedding lookups and their scatter-add backward.
#include "trident/model/embedding.hpp"

#include "trident/model/unit_gradients.hpp"

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
    pos_ = &store.add({.name = "embed.pos.weight", .global_shape = Shape{cfg.positions(), cfg.hidden},
                       .init = Init::kNormal, .init_std = 0.02});
}

void Embedding::forward(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out, Tensor& full) const {
  // The replicated position rows are added by one rank only: the group's sum adds the shards.
  const bool add_positions = pos_ && tp_.rank() == 0;
  Tensor& partial = tp_.splits_rows() ? full : out;
  ops.embedding_forward(tokens, positions, tok_->value, add_positions ? pos_->value : Tensor(), vocab_offset_, partial);
  Tensor& summed = tp_.reduce_to_rows(partial, out);
  TRIDENT_CHECK(&summed == &out, "embedding output must land in out");
}

void Embedding::forward_whole(Ops& ops, const Tensor& tokens, const Tensor& positions, Tensor& out) const {
  const bool add_positions = pos_ && tp_.rank() == 0;
  ops.embedding_forward(tokens, positions, tok_->value, add_positions ? pos_->value : Tensor(), vocab_offset_, out);
  tp_.all_reduce(out);
}

void Embedding::backward(Ops& ops, const Tensor& tokens, const Tensor& positions, const Tensor& dout,
                         Tensor& full) const {
  // The whole gradient on every rank (gathered from rows under sequence parallelism), so the
  // replicated position gradient is the same on all ranks.
  if (!tok_->needs_grad() && !(pos_ && pos_->needs_grad())) return;  // frozen (LoRA) or idle (LISA)
  const Tensor& all_rows = tp_.gather_rows(ops, dout, full);
  if (tok_->per_unit || (pos_ && pos_->per_unit)) {  // differential privacy's norm pass
    if (tok_->per_unit) tok_->per_unit->add_embedding(ops, *tok_, tokens, all_rows, vocab_offset_);
    if (pos_ && pos_->per_unit) pos_->per_unit->add_embedding(ops, *pos_, positions, all_rows, 0);
    return;
  }
  Tensor dpos = pos_ ? pos_->grad_or_none() : Tensor();
  Tensor dtok = tok_->grad_or_none();
  ops.embedding_backward(tokens, positions, all_rows, vocab_offset_, dtok, dpos);
}

}  // namespace trident::model
