// GPTModel: embedding, transformer blocks and head of a GPT-2 or Llama model, with explicit
// forward and backward over buffers allocated once for a fixed micro-batch size (no heap
// allocation per step). tokens, targets, positions: [B, T] int32 host tensors.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "trident/model/block.hpp"
#include "trident/model/embedding.hpp"
#include "trident/model/lm_head.hpp"

namespace trident::model {

class GPTModel {
 public:
  // dtype: fp32 for training, fp64 for finite-difference checks. The flat parameter buffers are
  // padded to a multiple of pad_multiple elements (data-parallel sharding). tp: the
  // tensor-parallel group the weights are split over (none: whole model).
  GPTModel(const ModelConfig& cfg, Ops& ops, DType dtype, int micro_batch, int64_t pad_multiple = 1,
           TensorParallel tp = {});

  // Initialises every parameter and keys the dropout masks, both from the seed.
  void initialize(uint64_t seed);
  ParamStore& params() { return params_; }
  const ModelConfig& config() const { return cfg_; }
  const TensorParallel& tensor_parallel() const { return tp_; }
  int micro_batch() const { return micro_batch_; }

  // Forward, loss and backward of one micro-batch. Parameter gradients accumulate, scaled by
  // grad_scale (1 / valid targets of the whole global batch, so accumulation and data
  // parallelism give the global mean). Returns the unscaled sum of token losses.
  double forward_backward(const Tensor& tokens, const Tensor& targets, const Tensor& positions,
                          double grad_scale);
  // Where the next micro-batch sits, for its dropout masks: the optimizer step and the index of
  // its first sequence within the global batch (so masks do not depend on the dp layout).
  void set_micro_batch_position(int64_t step, int64_t first_sequence) {
    dropout_step_ = step;
    dropout_first_sequence_ = first_sequence;
  }

  // Called during backward with an offset into the flat gradient buffer: from there to the end,
  // the gradients of this micro-batch are complete (data parallelism starts reducing them).
  // Offsets decrease over one backward pass and end at 0. Pass nullptr to remove.
  void set_grad_ready_hook(std::function<void(int64_t)> hook) { grad_ready_hook_ = std::move(hook); }

  // Forward only; returns the logits [B*T, V] (valid until the next call).
  const Tensor& forward_logits(const Tensor& tokens, const Tensor& positions);

  // Bytes of activations and buffers allocated for the micro-batch.
  size_t activation_bytes() const { return activation_bytes_; }

 private:
  void forward(const Tensor& tokens, const Tensor& positions, bool train);
  DropoutSite dropout_site(uint64_t key) const;
  void grads_ready_from(int64_t offset) const {
    if (grad_ready_hook_) grad_ready_hook_(offset);
  }

  ModelConfig cfg_;
  TensorParallel tp_;
  Ops& ops_;
  DType dtype_;
  int micro_batch_;
  ParamStore params_;
  std::unique_ptr<Embedding> embedding_;
  std::vector<std::unique_ptr<TransformerBlock>> blocks_;
  std::unique_ptr<LMHead> head_;
  std::vector<int64_t> block_offset_;      // flat offset of each block's first parameter
  int64_t head_offset_ = 0;                // flat offset of the final norm (then the head)
  std::function<void(int64_t)> grad_ready_hook_;
  uint64_t embed_dropout_key_ = 0;
  std::vector<TransformerBlock::Dropout> block_dropout_;  // keys only; position set per micro-batch
  int64_t dropout_step_ = 0, dropout_first_sequence_ = 0;

  // Per micro-batch buffers.
  Tensor tokens_, targets_, positions_;   // [B*T] on the device
  std::vector<Tensor> residual_;           // layers+1 tensors [B*T, C]: block inputs and output
  std::vector<BlockActivations> acts_;
  BlockScratch scratch_;
  HeadBuffers head_buffers_;
  Tensor dres_;                            // [B*T, C] gradient of the residual stream
  size_t activation_bytes_ = 0;
};

}  // namespace trident::model
