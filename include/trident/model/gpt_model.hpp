// GPTModel: this rank's part of a GPT-2 or Llama model: one or more model chunks (consecutive
// blocks; several with the interleaved pipeline schedule), the embedding when it holds the
// first virtual stage and the final norm, head and loss when it holds the last. Explicit
// forward and backward per (chunk, slot): a slot holds one in-flight micro-batch's
// activations, allocated once (no heap allocation per step). tokens, targets, positions:
// [B, T] int32 host tensors; activations between chunks are [B*T, C].
#pragma once
#include <optional>
#include <functional>
#include <memory>
#include <vector>

#include "trident/model/block.hpp"
#include "trident/model/embedding.hpp"
#include "trident/model/lm_head.hpp"
#include "trident/model/recompute.hpp"
#include "trident/model/unit_gradients.hpp"

namespace trident::model {

// Which layers this rank runs, in sub-layers: sub-layer 2l is block l's attention half (norm,
// attention, residual add), 2l + 1 its MLP (or MoE) half. chunks[c] = [first, last) sub-layers
// of its model chunk c (virtual stage c*pp + stage); an odd bound cuts a block between its
// halves (parallel.partition = balanced_sublayer), whose residual stream h then crosses stages.
// embedding / head: whether it holds virtual stage 0 / the last one; slots: micro-batches in
// flight per chunk.
struct StagePlan {
  std::vector<std::pair<int, int>> chunks;
  bool embedding = true;
  bool head = true;
  int slots = 1;
  Recompute recompute = Recompute::kNone;
  bool tied_copy() const { return head && !embedding; }  // holds the head's copy of the tied table

  // Whole blocks [first, last) as sub-layers.
  static std::pair<int, int> blocks(int first, int last) { return {2 * first, 2 * last}; }
  static StagePlan whole(const ModelConfig& cfg, Recompute recompute = Recompute::kNone) {
    return {{blocks(0, cfg.layers)}, true, true, 1, recompute};
  }
};

class GPTModel {
 public:
  // dtype: fp32 for training, fp64 for finite-difference checks. The flat parameter buffers are
  // padded to a multiple of pad_multiple elements (data-parallel sharding). tp: the
  // tensor-parallel group the weights are split over. plan: the layers this rank holds.
  // activation_dtype (bf16 or fp16: mixed precision): the activations kept for backward that
  // feed GEMMs and attention are stored in it, and where ops' matmul precision is that dtype,
  // GEMMs use a 16-bit copy of the weights (refresh_weights()), else the masters; master
  // weights, gradients, the residual stream, norm statistics and the loss stay in dtype.
  // ep: the group that splits the MoE layers' experts (expert parallelism; their parameters are
  // aligned to pad_multiple in the flat buffers, so their gradients reduce apart).
  GPTModel(const ModelConfig& cfg, Ops& ops, DType dtype, int micro_batch, int64_t pad_multiple = 1,
           TensorParallel tp = {}, StagePlan plan = {}, std::optional<DType> activation_dtype = {},
           ExpertParallel ep = {});
  // Mixed precision: copies the master weights into the 16-bit copy GEMMs use (after every
  // change of the masters: initialisation, loading, an optimizer step). No-op otherwise.
  void refresh_weights() { params_.refresh_low_precision(ops_); }

  // Initialises every parameter and keys the dropout masks, both from the seed.
  void initialize(uint64_t seed);
  ParamStore& params() { return params_; }
  const ModelConfig& config() const { return cfg_; }
  Ops& ops() const { return ops_; }  // the backend its tensors live on
  const StagePlan& plan() const { return plan_; }
  const TensorParallel& tensor_parallel() const { return tp_; }
  int micro_batch() const { return micro_batch_; }
  int num_chunks() const { return static_cast<int>(chunks_.size()); }

  // Where the next micro-batch sits, for its dropout masks: the optimizer step and the index of
  // its first sequence within the global batch (so masks do not depend on the layout).
  void set_micro_batch_position(int chunk, int slot, int64_t step, int64_t first_sequence);

  // Forward of one chunk for the micro-batch in `slot`. The first virtual stage embeds tokens;
  // others read their input from input(chunk, slot) (received from the previous stage). The
  // last virtual stage also computes the loss and its gradient at once (so [N, V] logits are
  // never kept per micro-batch); the unscaled sum of token losses waits on the device for
  // take_loss_sum().
  // last_micro_batch: the step's final pass over this chunk (gradients become final).
  void forward(int chunk, int slot, const Tensor& tokens, const Tensor& targets, const Tensor& positions,
                 double grad_scale, bool last_micro_batch = true);
  // The unscaled sum of token losses of the micro-batches forwarded since the last call (read
  // from the device once; 0 on ranks without the head). per_sequence (optional, [global batch]):
  // each sequence's loss sum added at its row (set_micro_batch_position placed them).
  double take_loss_sum(std::vector<double>* per_sequence = nullptr) { return losses_.take(ops_, per_sequence); }
  // Backward of one chunk: the last virtual stage starts from the loss gradient kept by
  // forward; others from grad(chunk, slot) (received from the next stage). Afterwards
  // grad(chunk, slot) holds the gradient of the chunk's input (to send to the previous stage).
  // Parameter gradients accumulate, scaled by grad_scale.
  void backward(int chunk, int slot, bool last_micro_batch = true);
  // The chunk's input activation and its output (what goes to the next stage), [R, C]: all
  // B*T rows, or this rank's share of them with sequence parallelism.
  Tensor& input(int chunk, int slot) { return slots_[chunk][slot].residual.front(); }
  Tensor& output(int chunk, int slot) { return slots_[chunk][slot].residual.back(); }
  Tensor& grad(int chunk, int slot) { return slots_[chunk][slot].dres; }

  // Forward of one chunk without dropout or gradients (evaluation), micro-batch in `slot`; the
  // last virtual stage returns the loss and accuracy sums, the others empty sums; per_token:
  // also each row's scores there (left untouched elsewhere).
  EvalSums evaluate(int chunk, int slot, const Tensor& tokens, const Tensor& targets, const Tensor& positions,
                    TokenScores* per_token = nullptr);

  // Whole-model shortcuts (one chunk holding everything): forward, loss and backward of one
  // micro-batch; returns the unscaled sum of token losses.
  double forward_backward(const Tensor& tokens, const Tensor& targets, const Tensor& positions, double grad_scale);
  // Forward only; returns the logits [B*T, V/tp] (valid until the next call).
  const Tensor& forward_logits(const Tensor& tokens, const Tensor& positions);

  // Called during backward with an offset into the flat gradient buffer: from there to the end
  // the gradients are complete (data parallelism starts reducing them). Offsets decrease over
  // the last micro-batch's backward. Pass nullptr to remove.
  void set_grad_ready_hook(std::function<void(int64_t)> hook) { grad_ready_hook_ = std::move(hook); }
  // The tied token table's gradient when it lives on two stages (pp > 1): summed over the
  // embedding group before the data-parallel reduction. Undefined otherwise.
  Tensor tied_embedding_grad() const;
  // Gradients from this offset on never wait for the embedding group (see above).
  int64_t untied_offset() const { return tied_end_; }

  // Differential privacy (UnitGradients; nullptr: off): the pass over the step's privacy units
  // the next forward and backward calls belong to. Measuring: the trainable parameters'
  // backward adds per-unit squared norms there instead of accumulating gradients. Either way
  // the head weights each unit's loss gradient (grad_scale should then be 1). Call before each
  // pass; the model refuses layers it cannot measure (unit_gradients.hpp).
  void set_unit_gradients(UnitGradients* units);
  // The privacy units of the micro-batch the next forward on (chunk, slot) loads (they must
  // outlive its backward).
  void set_micro_batch_units(int chunk, int slot, const std::vector<data::UnitSpan>* units) {
    slots_[chunk][slot].units = units;
  }

  // Mixture of experts: the weight of the auxiliary losses per token of the global batch
  // (loss scale / its tokens), set before each step; and the statistics the step's training
  // forward passes recorded, [moe layer][kMoeStatFields + E] sums over this rank's layers and
  // micro-batches (zero for layers on other stages), reset by reset_moe_stats().
  void set_moe_loss_scale(double scale) { moe_loss_scale_ = scale; }
  const std::vector<double>& moe_stats() const { return moe_stats_; }
  void reset_moe_stats() { std::fill(moe_stats_.begin(), moe_stats_.end(), 0.0); }

  size_t activation_bytes() const { return activation_bytes_; }
  DType dtype() const { return dtype_; }

  // The layers this rank holds, for generation (Decoder): the embedding (first virtual stage
  // only, else nullptr), the blocks of each chunk, the head (last virtual stage, else nullptr).
  const Embedding* embedding() const { return embedding_.get(); }
  const std::vector<std::unique_ptr<TransformerBlock>>& blocks(int chunk) const { return chunks_[chunk].blocks; }
  const LMHead* head() const { return head_.get(); }

 private:
  struct Slot {
    int64_t length = 0;                 // L <= T of the micro-batch in the slot (bucketed batches)
    int64_t first_sequence = 0;         // its row 0 within the global batch
    Tensor tokens, targets, positions;  // [B*T] on the device
    Tensor window_positions;            // [B*T] sliding-window layers' mask (TokenPositions), or undefined
    std::vector<Tensor> residual;       // chunk layers + 1: input, block outputs
    std::vector<BlockActivations> acts;
    Tensor dres;                        // [B*T, C] residual-stream gradient (sent upstream)
    DropoutSite embed_dropout;
    std::vector<TransformerBlock::Dropout> block_dropout;
    double moe_aux_scale = 0;  // the micro-batch's weight of the MoE auxiliary losses
    const std::vector<data::UnitSpan>* units = nullptr;  // differential privacy: its privacy units
  };
  struct Chunk {
    int first_layer = 0;
    std::vector<std::unique_ptr<TransformerBlock>> blocks;
    std::vector<int64_t> block_offset;  // flat offset of each block's first parameter
    bool embeds = false, predicts = false;
  };
  // The constructor's jobs, in the order it calls them (gpt_model.cpp says what each does).
  void add_parameters(int64_t pad_multiple, const ExpertParallel& ep);
  void add_embedding();
  Chunk make_chunk(size_t c, const ExpertParallel& ep);
  void allocate_parameters(int64_t pad_multiple, std::optional<DType> activation_dtype);
  void allocate_buffers();
  BlockActivations shared_activations(const std::vector<const TransformerBlock*>& kinds, bool attention);
  void make_recompute_buffers(const std::vector<const TransformerBlock*>& kinds);
  // LoRA: which inputs of frozen projections each block keeps (the others write frozen_inputs_).
  struct KeptInputs {
    bool norm1 = true, norm2 = true, act = true;  // norm1.y, norm2.y, mlp.act
  };
  KeptInputs make_frozen_inputs(const std::vector<const TransformerBlock*>& kinds);
  Slot make_slot(const Chunk& chunk, const KeptInputs& kept);
  BlockActivations make_block_activations(const TransformerBlock& block, const KeptInputs& kept);
  size_t count_activation_bytes() const;
  int64_t batch_rows() const { return int64_t(micro_batch_) * cfg_.seq_len; }  // B*T

  // loss: the last stage computes the loss and its gradient too (training).
  void run_forward(int chunk, int slot, bool train, double grad_scale, bool loss);
  bool any_dropout() const { return cfg_.dropout > 0 || (cfg_.lora.enabled() && cfg_.lora.dropout > 0); }
  // Copies a micro-batch of length L = positions.numel() / B into the slot (its prefix).
  void load_micro_batch(int chunk, int slot, const Tensor& tokens, const Tensor& targets, const Tensor& positions);
  // For one forward or backward call on a slot holding a shorter micro-batch: puts views cut to
  // its length in place of the slot's and the shared buffers, and restores them afterwards.
  class LengthScope;
  // Sequence parallelism leaves each rank part of the norms' gradients: sum them over the tp
  // group once they are complete (the step's last pass), before data parallelism reduces them.
  void finish_norm_grads(const std::vector<Tensor>& grads) const;
  // ... and a block's per-head q/k norm gradients (partial over heads whenever tp > 1).
  void finish_block_grads(const TransformerBlock& block) const;
  // Sliding-window layers narrower than seq_len mask by min(position, window - 1).
  bool needs_window_positions() const { return cfg_.sliding_window > 0 && cfg_.sliding_window < cfg_.seq_len; }
  void load_window_positions(Slot& s, const Tensor& positions);
  void grads_ready_from(int64_t offset) const {
    if (grad_ready_hook_) grad_ready_hook_(std::max(offset, tied_end_));
  }

  ModelConfig cfg_;
  TensorParallel tp_;
  StagePlan plan_;
  Ops& ops_;
  DType dtype_;
  int micro_batch_;
  ParamStore params_;
  std::unique_ptr<Embedding> embedding_;
  std::vector<Chunk> chunks_;
  std::unique_ptr<LMHead> head_;
  Parameter* tied_copy_ = nullptr;  // last stage's copy of embed.tok.weight (pp > 1, tied)
  int64_t head_offset_ = 0;         // flat offset of the final norm (then the head)
  int64_t tied_end_ = 0;            // end of the tied table in the flat buffer when it is shared
  std::vector<std::vector<Slot>> slots_;  // [chunk][slot]
  BlockScratch scratch_;
  LoraScratch lora_scratch_;  // LoRA dropout's masked copies (grown on demand, never trimmed)
  BlockActivations shared_acts_;  // recompute: the one set of block activations rebuilt in backward
  BlockActivations frozen_inputs_;  // LoRA: where inputs only frozen weights' gradients read are written
  Tensor recompute_out_;  // full recompute: where the rerun block writes its (unused) output
  Tensor window_host_;    // [B*T] int32 on the host: window positions on their way in
  HeadBuffers head_buffers_;
  StepLosses losses_;
  uint64_t embed_dropout_key_ = 0;
  std::vector<TransformerBlock::Dropout> layer_dropout_keys_;  // per global layer
  std::function<void(int64_t)> grad_ready_hook_;
  size_t activation_bytes_ = 0;
  double moe_loss_scale_ = 0;
  std::vector<double> moe_stats_;
  UnitGradients* units_ = nullptr;
  std::optional<DType> stored_dtype_;  // activation_dtype: the activations kept for backward
  std::optional<DType> gradient_dtype_;  // transient gradients' 16-bit dtype, when GEMMs compute in it
};

}  // namespace trident::model
