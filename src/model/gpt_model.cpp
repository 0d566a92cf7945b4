// The full model: builds parameters in forward order and runs forward / backward.
#include "trident/model/gpt_model.hpp"

#include "trident/core/rng.hpp"

namespace trident::model {

namespace {
size_t bytes_of(const Tensor& t) { return t.defined() ? t.bytes() : 0; }
}  // namespace

GPTModel::GPTModel(const ModelConfig& cfg, Ops& ops, DType dtype, int micro_batch, int64_t pad_multiple,
                   TensorParallel tp)
    : cfg_(cfg), tp_(tp), ops_(ops), dtype_(dtype), micro_batch_(micro_batch) {
  cfg_.resolve();
  cfg_.check_tensor_parallel(tp.size());
  embedding_ = std::make_unique<Embedding>(params_, cfg_, tp);
  // Parameters are laid out in forward order, so backward completes them from the end down.
  for (int l = 0; l < cfg_.layers; ++l) {
    block_offset_.push_back(params_.numel());
    blocks_.push_back(std::make_unique<TransformerBlock>(params_, l, cfg_, tp));
  }
  head_offset_ = params_.numel();
  head_ = std::make_unique<LMHead>(params_, cfg_, cfg_.tie_embeddings ? &embedding_->token_weight() : nullptr, tp);
  params_.allocate(ops_, dtype_, pad_multiple);

  const int64_t rows = int64_t(micro_batch) * cfg_.seq_len;
  tokens_ = ops_.zeros(Shape{rows}, DType::kI32);
  targets_ = ops_.zeros(Shape{rows}, DType::kI32);
  positions_ = ops_.zeros(Shape{rows}, DType::kI32);
  for (int l = 0; l <= cfg_.layers; ++l) residual_.push_back(ops_.zeros(Shape{rows, cfg_.hidden}, dtype_));
  for (auto& block : blocks_) acts_.push_back(block->make_activations(ops_, micro_batch, dtype_));
  scratch_ = blocks_.front()->make_scratch(ops_, micro_batch, dtype_);
  head_buffers_ = head_->make_buffers(ops_, rows, dtype_);
  dres_ = ops_.zeros(Shape{rows, cfg_.hidden}, dtype_);

  for (const Tensor& t : residual_) activation_bytes_ += bytes_of(t);
  for (const BlockActivations& a : acts_)
    for (const Tensor* t : {&a.norm1.y, &a.norm1.mean, &a.norm1.rstd, &a.attn.q, &a.attn.k, &a.attn.v, &a.attn.out,
                            &a.attn.lse, &a.mid, &a.norm2.y, &a.norm2.mean, &a.norm2.rstd, &a.mlp.up, &a.mlp.gate,
                            &a.mlp.act})
      activation_bytes_ += bytes_of(*t);
  activation_bytes_ += bytes_of(head_buffers_.logits) + bytes_of(dres_);
}

void GPTModel::initialize(uint64_t seed) {
  params_.initialize(ops_, seed);
  embed_dropout_key_ = rng_key(seed, "dropout.embed");
  block_dropout_.clear();
  for (int l = 0; l < cfg_.layers; ++l) {
    const std::string prefix = "dropout.blocks." + std::to_string(l);
    block_dropout_.push_back({.attn = {.key = rng_key(seed, prefix + ".attn")}, .mlp = {.key = rng_key(seed, prefix + ".mlp")}});
  }
}

DropoutSite GPTModel::dropout_site(uint64_t key) const {
  return {.p = cfg_.dropout, .key = key, .stream = static_cast<uint64_t>(dropout_step_),
          .first_index = dropout_first_sequence_ * cfg_.seq_len * cfg_.hidden};
}

void GPTModel::forward(const Tensor& tokens, const Tensor& positions, bool train) {
  TRIDENT_CHECK(tokens.numel() == tokens_.numel(), "batch of ", tokens.numel(), " tokens, model built for ",
                tokens_.numel());
  ops_.copy(tokens, tokens_);
  ops_.copy(positions, positions_);
  embedding_->forward(ops_, tokens_, positions_, residual_[0]);
  const bool dropout = train && cfg_.dropout > 0;
  if (dropout) dropout_site(embed_dropout_key_).apply(ops_, residual_[0]);
  for (size_t l = 0; l < blocks_.size(); ++l) {
    TransformerBlock::Dropout d;  // inactive unless training with dropout
    if (dropout) d = {.attn = dropout_site(block_dropout_[l].attn.key), .mlp = dropout_site(block_dropout_[l].mlp.key)};
    blocks_[l]->forward(ops_, residual_[l], positions_, acts_[l], residual_[l + 1], scratch_, d);
  }
  head_->forward(ops_, residual_.back(), head_buffers_);
}

const Tensor& GPTModel::forward_logits(const Tensor& tokens, const Tensor& positions) {
  forward(tokens, positions, /*train=*/false);
  return head_buffers_.logits;
}

double GPTModel::forward_backward(const Tensor& tokens, const Tensor& targets, const Tensor& positions,
                                  double grad_scale) {
  forward(tokens, positions, /*train=*/true);
  ops_.copy(targets, targets_);
  const double loss_sum = head_->loss_backward(ops_, residual_.back(), targets_, grad_scale, head_buffers_, dres_);
  grads_ready_from(head_offset_);
  const bool dropout = cfg_.dropout > 0;
  for (size_t l = blocks_.size(); l-- > 0;) {
    TransformerBlock::Dropout d;
    if (dropout) d = {.attn = dropout_site(block_dropout_[l].attn.key), .mlp = dropout_site(block_dropout_[l].mlp.key)};
    blocks_[l]->backward(ops_, residual_[l], positions_, acts_[l], dres_, scratch_, d);
    grads_ready_from(block_offset_[l]);
  }
  if (dropout) dropout_site(embed_dropout_key_).apply(ops_, dres_);
  embedding_->backward(ops_, tokens_, positions_, dres_);
  grads_ready_from(0);
  return loss_sum;
}

}  // namespace trident::model
