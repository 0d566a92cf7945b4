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

// The tensors of a block's activations, undefined ones included.
std::vector<const Tensor*> activation_tensors(const BlockActivations& a) {
  const AttentionActivations& at = a.attn;
  const MoeActivations& m = a.moe;
  return {&a.norm1.y, &a.norm1.mean, &a.norm1.rstd,
          &at.q, &at.k, &at.v, &at.out, &at.lse, &at.q_raw, &at.k_raw, &at.q_rstd, &at.k_rstd,
          &a.mid, &a.norm2.y, &a.norm2.mean, &a.norm2.rstd, &a.mlp.up, &a.mlp.gate, &a.mlp.act,
          &m.logits, &m.slots, &m.weights, &m.rows, &m.row_weights, &m.x, &m.experts.up, &m.experts.gate,
          &m.experts.act, &m.y, &m.shared.up, &m.shared.gate, &m.shared.act, &m.shared_y, &m.shared_logit,
          &m.shared_scale, &m.identity};
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
  add_parameters(pad_multiple, ep);
  allocate_parameters(pad_multiple, activation_dtype);
  allocate_buffers();
}

// Parameters are laid out in forward order, so backward completes them from the end down.
// A tied table shared with another stage comes first on both stages: its gradient waits
// for the embedding group, the rest can be reduced as soon as it is final.
void GPTModel::add_parameters(int64_t pad_multiple, const ExpertParallel& ep) {
  // LoRA: every weight but the adapters is frozen (no gradient, optimizer state or reduction).
  if (cfg_.lora.enabled()) params_.freeze_base();
  if (ep.size() > 1) {
    TRIDENT_CONFIG_CHECK(cfg_.moe.enabled(), "parallel.ep = ", ep.size(), " needs a mixture-of-experts model (moe.experts > 0)");
    params_.align_experts(pad_multiple);
  }
  add_embedding();
  for (size_t c = 0; c < plan_.chunks.size(); ++c) chunks_.push_back(make_chunk(c, ep));
  if (plan_.head) {
    head_offset_ = params_.numel();
    Parameter* tied = !cfg_.tie_embeddings ? nullptr : embedding_ ? &embedding_->token_weight() : tied_copy_;
    head_ = std::make_unique<LMHead>(params_, cfg_, tied, tp_);
  }
}

// The embedding on the first virtual stage; the head's copy of a tied table on a last stage
// without it; tied_end_ where the (trainable) table lives on two stages.
void GPTModel::add_embedding() {
  if (plan_.embedding) embedding_ = std::make_unique<Embedding>(params_, cfg_, tp_);
  if (plan_.tied_copy() && cfg_.tie_embeddings) {
    tied_copy_ = &Embedding::add_token_weight(params_, cfg_, tp_);
    tied_copy_->spec.counted_in_norm = false;  // the first stage counts the table
  }
  if (!(plan_.embedding && plan_.head) && cfg_.tie_embeddings && (plan_.embedding || plan_.head) &&
      !cfg_.lora.enabled())
    tied_end_ = (embedding_ ? embedding_->token_weight() : *tied_copy_).local_shape.numel();
}

// Model chunk c's blocks: whole ones, and half a block where a bound of the plan is odd.
GPTModel::Chunk GPTModel::make_chunk(size_t c, const ExpertParallel& ep) {
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
    chunk.blocks.push_back(std::make_unique<TransformerBlock>(params_, l, cfg_, tp_, ep, parts));
  }
  return chunk;
}

// The flat buffers. 16-bit weight copies and transient gradients only where GEMMs compute in
// 16 bits: at fp32 matmul precision (bf16 storage on a processor without fast bf16 GEMMs) they
// multiply the fp32 masters and fp32 gradients directly, and only the activations kept for
// backward are 16-bit (the memory saving).
void GPTModel::allocate_parameters(int64_t pad_multiple, std::optional<DType> activation_dtype) {
  params_.allocate(ops_, dtype_, pad_multiple);
  const bool gemms16 = activation_dtype && *activation_dtype != dtype_ && ops_.matmul_precision() == *activation_dtype;
  if (gemms16) params_.allocate_low_precision(ops_, *activation_dtype);
  stored_dtype_ = activation_dtype;
  gradient_dtype_ = gemms16 ? activation_dtype : std::nullopt;
}

// Every buffer of forward and backward, allocated once: the slots of each chunk, and the ones
// all blocks share, which need the parts of every kind this rank holds (attention and MLP
// halves, dense and MoE layers): one block of each kind overlaid.
void GPTModel::allocate_buffers() {
  const int64_t rows = batch_rows();
  TRIDENT_CHECK(!tp_.splits_rows() || rows % tp_.size() == 0, "sequence parallelism needs micro_batch * seq_len (",
                rows, ") divisible by tp (", tp_.size(), ")");
  if (needs_window_positions()) window_host_ = Tensor::zeros(Shape{rows}, DType::kI32);
  std::vector<const TransformerBlock*> kinds;
  std::set<std::tuple<bool, bool, bool>> seen;
  for (const Chunk& chunk : chunks_)
    for (const auto& block : chunk.blocks)
      if (seen.insert(block->kind()).second) kinds.push_back(block.get());
  make_recompute_buffers(kinds);
  const KeptInputs kept = make_frozen_inputs(kinds);
  for (const Chunk& chunk : chunks_) {
    std::vector<Slot> slots;
    slots.reserve(static_cast<size_t>(plan_.slots));
    for (int k = 0; k < plan_.slots; ++k) slots.push_back(make_slot(chunk, kept));
    slots_.push_back(std::move(slots));
  }
  for (const TransformerBlock* k : kinds) overlay(scratch_, k->make_scratch(ops_, micro_batch_, dtype_, stored_dtype_, gradient_dtype_));
  if (cfg_.moe.enabled()) moe_stats_.assign(size_t(cfg_.moe_layers()) * (kMoeStatFields + cfg_.moe.experts), 0.0);
  if (head_) head_buffers_ = head_->make_buffers(ops_, rows, dtype_, stored_dtype_, 0, gradient_dtype_);
  activation_bytes_ = count_activation_bytes();
}

// One block of each kind's activations overlaid (see allocate_buffers).
BlockActivations GPTModel::shared_activations(const std::vector<const TransformerBlock*>& kinds, bool attention) {
  BlockActivations a;
  for (const TransformerBlock* k : kinds) overlay(a, k->make_activations(ops_, micro_batch_, dtype_, attention, stored_dtype_));
  return a;
}

// With recompute, the activations rebuilt in backward live once, shared by every block and
// slot (all blocks have the same shapes); the slots keep views of them. Full recompute's
// rerun block writes its (unused) output to recompute_out_.
void GPTModel::make_recompute_buffers(const std::vector<const TransformerBlock*>& kinds) {
  if (plan_.recompute == Recompute::kNone || kinds.empty()) return;
  shared_acts_ = shared_activations(kinds, /*attention=*/true);
  if (plan_.recompute == Recompute::kFull)
    recompute_out_ = ops_.zeros(Shape{tp_.local_rows(batch_rows()), cfg_.hidden}, dtype_);
}

// LoRA: the inputs of frozen projections without adapters feed only weight gradients that are
// never computed; one shared copy takes them (the forward still needs somewhere to write).
// norm1.y also feeds selective recompute; attention's output its own backward: both stay.
GPTModel::KeptInputs GPTModel::make_frozen_inputs(const std::vector<const TransformerBlock*>& kinds) {
  const LoraConfig& lora = cfg_.lora;
  if (!lora.enabled() || kinds.empty() || plan_.recompute == Recompute::kFull) return {};
  const KeptInputs kept{
      .norm1 = plan_.recompute == Recompute::kSelective || lora.rank_for("q") || lora.rank_for("k") || lora.rank_for("v"),
      .norm2 = lora.rank_for("up") || lora.rank_for("gate"),
      .act = lora.rank_for("down") != 0};
  if (!(kept.norm1 && kept.norm2 && kept.act)) frozen_inputs_ = shared_activations(kinds, /*attention=*/false);
  return kept;
}

// One in-flight micro-batch's buffers for a chunk: its tokens, targets and positions on the
// device, the residual stream (the input, then each block's output), the blocks' activations
// and the gradient of the chunk's input.
GPTModel::Slot GPTModel::make_slot(const Chunk& chunk, const KeptInputs& kept) {
  const int64_t rows = batch_rows(), local = tp_.local_rows(rows);
  Slot s;
  s.length = cfg_.seq_len;
  s.tokens = ops_.zeros(Shape{rows}, DType::kI32);
  s.targets = ops_.zeros(Shape{rows}, DType::kI32);
  s.positions = ops_.zeros(Shape{rows}, DType::kI32);
  if (needs_window_positions()) s.window_positions = ops_.zeros(Shape{rows}, DType::kI32);
  for (size_t l = 0; l <= chunk.blocks.size(); ++l) s.residual.push_back(ops_.zeros(Shape{local, cfg_.hidden}, dtype_));
  for (const auto& block : chunk.blocks) s.acts.push_back(make_block_activations(*block, kept));
  s.dres = ops_.zeros(Shape{local, cfg_.hidden}, dtype_);
  s.block_dropout.resize(chunk.blocks.size());
  return s;
}

// A block's activations in one slot: under full recompute the shared set; else its own, but
// for the parts held once: attention's under selective recompute (rebuilt in backward) and the
// LoRA frozen inputs not kept. Only the parts the block holds are shared (a half block leaves
// the other half's undefined).
BlockActivations GPTModel::make_block_activations(const TransformerBlock& block, const KeptInputs& kept) {
  if (plan_.recompute == Recompute::kFull) return shared_acts_;
  const bool selective = plan_.recompute == Recompute::kSelective;
  BlockActivations a = block.make_activations(ops_, micro_batch_, dtype_, /*attention=*/!selective, stored_dtype_);
  const auto share = [](bool keep, Tensor& t, const Tensor& frozen) {
    if (!keep && t.defined()) t = frozen;
  };
  share(kept.norm1, a.norm1.y, frozen_inputs_.norm1.y);
  share(kept.norm2, a.norm2.y, frozen_inputs_.norm2.y);
  share(kept.act, a.mlp.act, frozen_inputs_.mlp.act);
  if (selective && block.has_attention()) a.attn = shared_acts_.attn;
  return a;
}

// What the slots keep for backward (activations, residual stream, input gradient), full
// recompute's output and the head's logits and their gradient: each buffer once, since the
// slots share recompute's and the frozen inputs' buffers, and dlogits may be the logits.
size_t GPTModel::count_activation_bytes() const {
  std::set<const void*> seen;
  size_t n = 0;
  const auto add = [&](const Tensor& t) {
    if (t.defined() && seen.insert(t.raw()).second) n += t.bytes();
  };
  for (const std::vector<Slot>& slots : slots_)
    for (const Slot& s : slots) {
      for (const Tensor& t : s.residual) add(t);
      add(s.dres);
      for (const BlockActivations& a : s.acts)
        for (const Tensor* t : activation_tensors(a)) add(*t);
    }
  add(recompute_out_);
  add(head_buffers_.logits);
  add(head_buffers_.dlogits);
  return n;
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
  Slot& s = slots_[chunk][slot];
  s.first_sequence = first_sequence;  // where its losses go (StepLosses::place)
  if (!any_dropout()) return;  // no masks to place
  TRIDENT_CHECK(!layer_dropout_keys_.empty(), "dropout needs initialize(seed) to key its masks");
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
  losses_.place(s.first_sequence, micro_batch_);
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
