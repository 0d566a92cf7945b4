// This rank's model chunks: parameters in forward order, per-slot buffers, and forward /
// backward of one chunk for one micro-batch.
#include "trident/model/gpt_model.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "trident/core/rng.hpp"
#include "trimmed_views.hpp"

namespace trident::model {

namespace {
size_t bytes_of(const Tensor& t) { return t.defined() ? t.bytes() : 0; }

size_t attention_bytes(const AttentionActivations& a) {
  return bytes_of(a.q) + bytes_of(a.k) + bytes_of(a.v) + bytes_of(a.out) + bytes_of(a.lse) + bytes_of(a.q_raw) +
         bytes_of(a.k_raw) + bytes_of(a.q_rstd) + bytes_of(a.k_rstd);
}

size_t moe_bytes(const MoeActivations& a) {
  size_t n = 0;
  for (const Tensor* t : {&a.logits, &a.slots, &a.weights, &a.rows, &a.row_weights, &a.x, &a.experts.up,
                          &a.experts.gate, &a.experts.act, &a.y, &a.shared.up, &a.shared.gate, &a.shared.act,
                          &a.shared_y, &a.shared_logit, &a.shared_scale, &a.identity})
    n += bytes_of(*t);
  return n;
}

size_t activation_bytes_of(const BlockActivations& a) {
  size_t n = attention_bytes(a.attn) + moe_bytes(a.moe);
  for (const Tensor* t : {&a.norm1.y, &a.norm1.mean, &a.norm1.rstd, &a.mid, &a.norm2.y, &a.norm2.mean, &a.norm2.rstd,
                          &a.mlp.up, &a.mlp.gate, &a.mlp.act})
    n += bytes_of(*t);
  return n;
}
}  // namespace

class GPTModel::LengthScope {
 public:
  LengthScope(GPTModel& m, int chunk, int slot)
      : m_(m), slot_(m.slots_[chunk][slot]), trim_(m.cfg_.seq_len, slot_.length) {
    if (!trim_.active()) return;
    saved_slot_ = slot_;
    saved_scratch_ = m.scratch_;
    saved_head_ = m.head_buffers_;
    saved_recompute_out_ = m.recompute_out_;
    for (Tensor* t : {&slot_.tokens, &slot_.targets, &slot_.positions, &slot_.window_positions, &slot_.dres})
      *t = trim_.rows(*t);
    for (Tensor& t : slot_.residual) t = trim_.rows(t);
    for (BlockActivations& a : slot_.acts) a = trim_(a);
    m.scratch_ = trim_(m.scratch_);
    if (m.head_) m.head_buffers_ = trim_(m.head_buffers_);
    m.recompute_out_ = trim_.rows(m.recompute_out_);
  }
  ~LengthScope() {
    if (!trim_.active()) return;
    slot_ = saved_slot_;
    m_.scratch_ = saved_scratch_;
    m_.head_buffers_ = saved_head_;
    m_.recompute_out_ = saved_recompute_out_;
  }
  LengthScope(const LengthScope&) = delete;
  LengthScope& operator=(const LengthScope&) = delete;

 private:
  GPTModel& m_;
  Slot& slot_;
  SequenceTrim trim_;
  Slot saved_slot_;
  BlockScratch saved_scratch_;
  HeadBuffers saved_head_;
  Tensor saved_recompute_out_;
};

GPTModel::GPTModel(const ModelConfig& cfg, Ops& ops, DType dtype, int micro_batch, int64_t pad_multiple,
                   TensorParallel tp, StagePlan plan, std::optional<DType> activation_dtype, ExpertParallel ep)
    : cfg_(cfg), tp_(tp), plan_(std::move(plan)), ops_(ops), dtype_(dtype), micro_batch_(micro_batch) {
  cfg_.resolve();
  cfg_.check_tensor_parallel(tp.size());
  if (plan_.chunks.empty()) plan_ = StagePlan::whole(cfg_);
  TRIDENT_CHECK(plan_.slots >= 1, "a stage needs at least one activation slot");

  // Parameters are laid out in forward order, so backward completes them from the end down.
  // A tied table shared with another stage comes first on both stages: its gradient waits
  // for the embedding group, the rest can be reduced as soon as it is final.
  // LoRA: every weight but the adapters is frozen (no gradient, optimizer state or reduction).
  if (cfg_.lora.enabled()) params_.freeze_base();
  if (ep.size() > 1) {
    TRIDENT_CONFIG_CHECK(cfg_.moe.enabled(), "parallel.ep = ", ep.size(), " needs a mixture-of-experts model (moe.experts > 0)");
    params_.align_experts(pad_multiple);
  }
  if (plan_.embedding) embedding_ = std::make_unique<Embedding>(params_, cfg_, tp);
  if (plan_.tied_copy() && cfg_.tie_embeddings) {
    tied_copy_ = &Embedding::add_token_weight(params_, cfg_, tp);
    tied_copy_->spec.counted_in_norm = false;  // the first stage counts the table
  }
  if (!(plan_.embedding && plan_.head) && cfg_.tie_embeddings && (plan_.embedding || plan_.head) &&
      !cfg_.lora.enabled())
    tied_end_ = (embedding_ ? embedding_->token_weight() : *tied_copy_).local_shape.numel();
  for (size_t c = 0; c < plan_.chunks.size(); ++c) {
    const auto [first, last] = plan_.chunks[c];  // sub-layers
    TRIDENT_CHECK(0 <= first && first < last && last <= 2 * cfg_.layers, "stage plan: sub-layers [", first, ", ",
                  last, ") of a ", cfg_.layers, "-layer model");
    Chunk chunk;
    chunk.first_layer = first / 2;
    chunk.embeds = plan_.embedding && c == 0;
    chunk.predicts = plan_.head && c + 1 == plan_.chunks.size();
    for (int l = first / 2; 2 * l < last; ++l) {
      const BlockParts parts = 2 * l < first     ? BlockParts::kMlp
                               : 2 * l + 1 >= last ? BlockParts::kAttention
                                                   : BlockParts::kWhole;
      chunk.block_offset.push_back(params_.numel());
      chunk.blocks.push_back(std::make_unique<TransformerBlock>(params_, l, cfg_, tp, ep, parts));
    }
    chunks_.push_back(std::move(chunk));
  }
  if (plan_.head) {
    head_offset_ = params_.numel();
    Parameter* tied = !cfg_.tie_embeddings ? nullptr : embedding_ ? &embedding_->token_weight() : tied_copy_;
    head_ = std::make_unique<LMHead>(params_, cfg_, tied, tp);
  }
  params_.allocate(ops_, dtype_, pad_multiple);
  // 16-bit weight copies and transient gradients only where GEMMs compute in 16 bits: at fp32
  // matmul precision (bf16 storage on a processor without fast bf16 GEMMs) they multiply the
  // fp32 masters and fp32 gradients directly, and only the activations kept for backward are
  // 16-bit (the memory saving).
  const bool gemms16 = activation_dtype && *activation_dtype != dtype_ && ops_.matmul_precision() == *activation_dtype;
  if (gemms16) params_.allocate_low_precision(ops_, *activation_dtype);
  const std::optional<DType> stored = activation_dtype;
  stored_dtype_ = stored;
  gradient_dtype_ = gemms16 ? activation_dtype : std::nullopt;

  const int64_t rows = int64_t(micro_batch) * cfg_.seq_len, local = tp_.local_rows(rows);
  TRIDENT_CHECK(!tp_.splits_rows() || rows % tp_.size() == 0, "sequence parallelism needs micro_batch * seq_len (",
                rows, ") divisible by tp (", tp_.size(), ")");
  if (needs_window_positions()) window_host_ = Tensor::zeros(Shape{rows}, DType::kI32);
  // Buffers shared by all blocks need the parts of every kind this rank holds (attention and
  // MLP halves, dense and MoE layers): one block of each kind overlaid.
  std::vector<const TransformerBlock*> kinds;
  std::set<std::tuple<bool, bool, bool>> seen;
  for (Chunk& chunk : chunks_)
    for (auto& block : chunk.blocks)
      if (seen.insert(block->kind()).second) kinds.push_back(block.get());
  const bool any_block = !kinds.empty();
  auto shared_activations = [&](bool attention) {
    BlockActivations a;
    for (const TransformerBlock* k : kinds) overlay(a, k->make_activations(ops_, micro_batch, dtype_, attention, stored));
    return a;
  };
  // With recompute, the activations rebuilt in backward live once, shared by every block and
  // slot (all blocks have the same shapes); the slots keep views of them.
  if (plan_.recompute != Recompute::kNone && any_block) {
    shared_acts_ = shared_activations(/*attention=*/true);
    activation_bytes_ += plan_.recompute == Recompute::kFull ? activation_bytes_of(shared_acts_)
                                                             : attention_bytes(shared_acts_.attn);
    if (plan_.recompute == Recompute::kFull) {
      recompute_out_ = ops_.zeros(Shape{local, cfg_.hidden}, dtype_);
      activation_bytes_ += bytes_of(recompute_out_);
    }
  }
  // LoRA: the inputs of frozen projections without adapters feed only weight gradients that are
  // never computed; one shared copy takes them (the forward still needs somewhere to write).
  // norm1.y also feeds selective recompute; attention's output its own backward: both stay.
  const LoraConfig& lora = cfg_.lora;
  const bool share_frozen_inputs = lora.enabled() && any_block && plan_.recompute != Recompute::kFull;
  const bool keep_norm1 = !share_frozen_inputs || plan_.recompute == Recompute::kSelective || lora.rank_for("q") ||
                          lora.rank_for("k") || lora.rank_for("v");
  const bool keep_norm2 = !share_frozen_inputs || lora.rank_for("up") || lora.rank_for("gate");
  const bool keep_act = !share_frozen_inputs || lora.rank_for("down");
  if (share_frozen_inputs && !(keep_norm1 && keep_norm2 && keep_act)) {
    frozen_inputs_ = shared_activations(/*attention=*/false);
    activation_bytes_ += (keep_norm1 ? 0 : bytes_of(frozen_inputs_.norm1.y)) +
                         (keep_norm2 ? 0 : bytes_of(frozen_inputs_.norm2.y)) + (keep_act ? 0 : bytes_of(frozen_inputs_.mlp.act));
  }
  for (Chunk& chunk : chunks_) {
    std::vector<Slot> slots(static_cast<size_t>(plan_.slots));
    for (Slot& s : slots) {
      s.length = cfg_.seq_len;
      s.tokens = ops_.zeros(Shape{rows}, DType::kI32);
      s.targets = ops_.zeros(Shape{rows}, DType::kI32);
      s.positions = ops_.zeros(Shape{rows}, DType::kI32);
      if (needs_window_positions()) s.window_positions = ops_.zeros(Shape{rows}, DType::kI32);
      for (size_t l = 0; l <= chunk.blocks.size(); ++l) s.residual.push_back(ops_.zeros(Shape{local, cfg_.hidden}, dtype_));
      for (auto& block : chunk.blocks) {
        if (plan_.recompute == Recompute::kFull) {
          s.acts.push_back(shared_acts_);
          continue;
        }
        const bool selective = plan_.recompute == Recompute::kSelective;
        BlockActivations a = block->make_activations(ops_, micro_batch, dtype_, /*attention=*/!selective, stored);
        activation_bytes_ += activation_bytes_of(a);
        // Only the parts the block holds (a half block leaves the other half's undefined).
        auto share = [&](bool keep, Tensor& t, const Tensor& frozen) {
          if (keep || !t.defined()) return;
          activation_bytes_ -= bytes_of(t);
          t = frozen;
        };
        share(keep_norm1, a.norm1.y, frozen_inputs_.norm1.y);
        share(keep_norm2, a.norm2.y, frozen_inputs_.norm2.y);
        share(keep_act, a.mlp.act, frozen_inputs_.mlp.act);
        if (selective && block->has_attention()) a.attn = shared_acts_.attn;  // rebuilt in backward
        s.acts.push_back(std::move(a));
      }
      s.dres = ops_.zeros(Shape{local, cfg_.hidden}, dtype_);
      s.block_dropout.resize(chunk.blocks.size());
      for (const Tensor& t : s.residual) activation_bytes_ += bytes_of(t);
      activation_bytes_ += bytes_of(s.dres);
    }
    slots_.push_back(std::move(slots));
  }
  for (const TransformerBlock* k : kinds) overlay(scratch_, k->make_scratch(ops_, micro_batch, dtype_, stored, gradient_dtype_));
  if (cfg_.moe.enabled()) moe_stats_.assign(size_t(cfg_.moe_layers()) * (kMoeStatFields + cfg_.moe.experts), 0.0);
  if (head_) {
    head_buffers_ = head_->make_buffers(ops_, rows, dtype_, stored, 0, gradient_dtype_);
    activation_bytes_ += bytes_of(head_buffers_.logits);
    if (head_buffers_.dlogits.raw() != head_buffers_.logits.raw()) activation_bytes_ += bytes_of(head_buffers_.dlogits);
  }
}

void GPTModel::initialize(uint64_t seed) {
  params_.initialize(ops_, seed);
  embed_dropout_key_ = rng_key(seed, "dropout.embed");
  layer_dropout_keys_.clear();
  for (int l = 0; l < cfg_.layers; ++l) {
    const std::string prefix = "dropout.blocks." + std::to_string(l);
    layer_dropout_keys_.push_back({.attn = {.key = rng_key(seed, prefix + ".attn")},
                                   .mlp = {.key = rng_key(seed, prefix + ".mlp")},
                                   .lora = {.key = rng_key(seed, prefix + ".lora")}});
  }
}

void GPTModel::set_micro_batch_position(int chunk, int slot, int64_t step, int64_t first_sequence) {
  if (!any_dropout()) return;  // no masks to place
  TRIDENT_CHECK(!layer_dropout_keys_.empty(), "dropout needs initialize(seed) to key its masks");
  Slot& s = slots_[chunk][slot];
  // Dropout applies to this rank's rows of the residual stream: their global element index.
  const int64_t rows = int64_t(micro_batch_) * cfg_.seq_len;
  const int64_t first_row = first_sequence * cfg_.seq_len + tp_.first_row(rows);
  auto site = [&](uint64_t key) {  // p = 0 (inactive) when only the LoRA adapters drop
    return DropoutSite{.p = cfg_.dropout, .key = key, .stream = static_cast<uint64_t>(step),
                       .first_index = first_row * cfg_.hidden};
  };
  s.embed_dropout = site(embed_dropout_key_);
  const Chunk& c = chunks_[chunk];
  for (size_t b = 0; b < c.blocks.size(); ++b) {
    const auto& keys = layer_dropout_keys_.at(static_cast<size_t>(c.first_layer) + b);
    s.block_dropout[b] = {.attn = site(keys.attn.key), .mlp = site(keys.mlp.key),
                          .lora = {.p = cfg_.lora.enabled() ? cfg_.lora.dropout : 0.0, .key = keys.lora.key,
                                   .stream = static_cast<uint64_t>(step), .first_index = first_sequence * cfg_.seq_len,
                                   .lora_scratch = &lora_scratch_}};
  }
}

void GPTModel::run_forward(int chunk, int slot, bool train, double grad_scale, bool loss) {
  Chunk& c = chunks_[chunk];
  Slot& s = slots_[chunk][slot];
  const bool dropout = train && any_dropout();
  if (c.embeds) {
    embedding_->forward(ops_, s.tokens, s.positions, s.residual[0], scratch_.partial);
    if (dropout) s.embed_dropout.apply(ops_, s.residual[0]);
  }
  const TokenPositions positions(s.positions, s.window_positions);
  const MoeStep moe = train ? MoeStep{.aux_scale = s.moe_aux_scale, .stats = moe_stats_.data()} : MoeStep{};
  for (size_t l = 0; l < c.blocks.size(); ++l)
    c.blocks[l]->forward(ops_, s.residual[l], positions, s.acts[l], s.residual[l + 1], scratch_,
                         dropout ? s.block_dropout[l] : TransformerBlock::Dropout{}, moe);
  if (!c.predicts) return;
  head_->forward(ops_, s.residual.back(), head_buffers_);
  if (!loss) return;
  if (units_) units_->set_micro_batch(s.units, s.length);
  head_->loss_backward(ops_, s.residual.back(), s.targets, grad_scale, head_buffers_, s.dres, losses_, units_);
}

void GPTModel::finish_norm_grads(const std::vector<Tensor>& grads) const {
  if (!tp_.splits_rows()) return;
  for (Tensor g : grads)
    if (g.defined()) tp_.all_reduce(g);  // undefined: frozen
}

void GPTModel::finish_block_grads(const TransformerBlock& block) const {
  finish_norm_grads(block.norm_grads());
  if (tp_.size() == 1) return;
  for (Tensor g : block.tp_partial_grads())
    if (g.defined()) tp_.all_reduce(g);
}

void GPTModel::load_window_positions(Slot& s, const Tensor& positions) {
  const int64_t n = positions.numel();
  const int32_t w = cfg_.sliding_window;
  Tensor host = window_host_.narrow(0, n);
  ops_.copy(positions, host);
  int32_t* p = host.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = std::min(p[i], w - 1);
  Tensor dst = s.window_positions.narrow(0, n);
  ops_.copy(host, dst);
}

void GPTModel::load_micro_batch(int chunk, int slot, const Tensor& tokens, const Tensor& targets,
                                const Tensor& positions) {
  Slot& s = slots_[chunk][slot];
  const int64_t n = positions.numel(), length = n / micro_batch_;
  TRIDENT_CHECK(n % micro_batch_ == 0 && length >= 1 && length <= cfg_.seq_len, "batch of ", n,
                " tokens for micro-batch ", micro_batch_, " and seq_len ", cfg_.seq_len);
  TRIDENT_CHECK(length == cfg_.seq_len || (chunks_.size() == 1 && chunks_[0].embeds && chunks_[0].predicts),
                "micro-batches shorter than seq_len need the whole model on this rank (pp = 1)");
  TRIDENT_CHECK(!tp_.splits_rows() || n % tp_.size() == 0, "sequence parallelism needs micro_batch * length (", n,
                ") divisible by tp");
  s.length = length;
  auto load = [&](const Tensor& from, const Tensor& buffer) {
    Tensor prefix = buffer.narrow(0, n);
    ops_.copy(from, prefix);
  };
  load(positions, s.positions);
  if (s.window_positions.defined()) load_window_positions(s, positions);
  if (chunks_[chunk].embeds) load(tokens, s.tokens);
  if (chunks_[chunk].predicts) load(targets, s.targets);
}

void GPTModel::forward(int chunk, int slot, const Tensor& tokens, const Tensor& targets, const Tensor& positions,
                       double grad_scale, bool last_micro_batch) {
  load_micro_batch(chunk, slot, tokens, targets, positions);
  // The auxiliary losses of each MoE layer, averaged over the layers, enter the objective with
  // the micro-batch's share of the global batch's tokens (the same for any layout). Set
  // before the length scope, which restores the slot as it found it.
  Slot& s = slots_[chunk][slot];
  s.moe_aux_scale = cfg_.moe.enabled() ? moe_loss_scale_ * double(positions.numel()) / cfg_.moe_layers() : 0.0;
  const LengthScope scope(*this, chunk, slot);
  run_forward(chunk, slot, /*train=*/true, grad_scale, /*loss=*/true);
  if (chunks_[chunk].predicts && last_micro_batch) {
    finish_norm_grads(head_->norm_grads());
    grads_ready_from(head_offset_);
  }
}

void GPTModel::backward(int chunk, int slot, bool last_micro_batch) {
  const LengthScope scope(*this, chunk, slot);
  Chunk& c = chunks_[chunk];
  Slot& s = slots_[chunk][slot];
  const bool dropout = any_dropout();
  const TokenPositions positions(s.positions, s.window_positions);
  if (units_) units_->set_micro_batch(s.units, s.length);
  for (size_t l = c.blocks.size(); l-- > 0;) {
    const TransformerBlock::Dropout d = dropout ? s.block_dropout[l] : TransformerBlock::Dropout{};
    // Rebuild what the forward pass did not keep: same kernels, same inputs, same values.
    if (plan_.recompute == Recompute::kFull)
      c.blocks[l]->forward(ops_, s.residual[l], positions, s.acts[l], recompute_out_, scratch_, d,
                           MoeStep{.aux_scale = s.moe_aux_scale});
    else if (plan_.recompute == Recompute::kSelective)
      c.blocks[l]->recompute_attention(ops_, positions, s.acts[l], scratch_, d.lora);
    c.blocks[l]->backward(ops_, s.residual[l], positions, s.acts[l], s.dres, scratch_, d);
    if (last_micro_batch) {
      finish_block_grads(*c.blocks[l]);
      grads_ready_from(c.block_offset[l]);
    }
  }
  if (c.embeds) {
    if (dropout) s.embed_dropout.apply(ops_, s.dres);
    embedding_->backward(ops_, s.tokens, s.positions, s.dres, scratch_.partial);
    if (last_micro_batch) grads_ready_from(0);
  }
}

EvalSums GPTModel::evaluate(int chunk, int slot, const Tensor& tokens, const Tensor& targets,
                            const Tensor& positions, TokenScores* per_token) {
  load_micro_batch(chunk, slot, tokens, targets, positions);
  const LengthScope scope(*this, chunk, slot);
  Slot& s = slots_[chunk][slot];
  run_forward(chunk, slot, /*train=*/false, 0.0, /*loss=*/false);
  return chunks_[chunk].predicts ? head_->evaluate(ops_, s.targets, head_buffers_, per_token) : EvalSums{};
}

double GPTModel::forward_backward(const Tensor& tokens, const Tensor& targets, const Tensor& positions,
                                  double grad_scale) {
  TRIDENT_CHECK(chunks_.size() == 1 && chunks_[0].embeds && chunks_[0].predicts,
                "forward_backward needs the whole model on this rank");
  take_loss_sum();  // only this micro-batch's loss is returned, whatever an earlier forward left
  forward(0, 0, tokens, targets, positions, grad_scale);
  backward(0, 0);
  return take_loss_sum();
}

const Tensor& GPTModel::forward_logits(const Tensor& tokens, const Tensor& positions) {
  TRIDENT_CHECK(chunks_.size() == 1 && chunks_[0].embeds && chunks_[0].predicts,
                "forward_logits needs the whole model on this rank");
  Slot& s = slots_[0][0];
  s.length = cfg_.seq_len;
  ops_.copy(tokens, s.tokens);
  ops_.copy(positions, s.positions);
  if (s.window_positions.defined()) load_window_positions(s, positions);
  run_forward(0, 0, /*train=*/false, 0.0, /*loss=*/false);
  return head_->logits(ops_, head_buffers_);
}

void GPTModel::set_unit_gradients(UnitGradients* units) {
  if (units) {
    TRIDENT_CHECK(!cfg_.moe.enabled() && !tp_.splits_rows() && !cfg_.qk_norm,
                  "per-unit gradient norms do not cover MoE layers, sequence parallelism or q/k norms");
    const Parameter* tok = params_.find("embed.tok.weight");
    TRIDENT_CHECK(!cfg_.tie_embeddings || !tok || !tok->trainable(),
                  "per-unit gradient norms do not cover a trainable tied token table");
    // Logits chunks of whole rows (a unit never crosses one): at least one row of seq_len.
    if (head_ && head_buffers_.row_max.numel() < cfg_.seq_len) {
      const int64_t rows = int64_t(micro_batch_) * cfg_.seq_len;
      activation_bytes_ -= bytes_of(head_buffers_.logits);
      head_buffers_ = head_->make_buffers(ops_, rows, dtype_, stored_dtype_, cfg_.seq_len, gradient_dtype_);
      activation_bytes_ += bytes_of(head_buffers_.logits);
    if (head_buffers_.dlogits.raw() != head_buffers_.logits.raw()) activation_bytes_ += bytes_of(head_buffers_.dlogits);
    }
  }
  units_ = units;
  const bool measure = units && units->measuring();
  for (auto& p : params_.all()) p->per_unit = measure && p->needs_grad() ? units : nullptr;
}

Tensor GPTModel::tied_embedding_grad() const {
  if (tied_end_ == 0) return Tensor();
  return params_.flat_grads().narrow(0, tied_end_);
}

}  // namespace trident::model
