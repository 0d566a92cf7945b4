// One pre-norm transformer block: y = h + mlp(norm2(h)), h = x + attn(norm1(x)).
// x, h, y: [R, C], R = N rows, or N/tp with sequence parallelism (the norms, residual adds and
// dropout then work on this rank's rows; attention and MLP see all N rows).
// GPT-2 (LayerNorm, GELU MLP) or Llama (RMSNorm, RoPE, GQA, SwiGLU, optionally q/k norms and
// a sliding window).
// A pipeline stage may hold one half of a block (parallel.partition = balanced_sublayer): the
// attention half maps x to h, the MLP half h to y; the residual stream h then crosses stages.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "trident/model/attention.hpp"
#include "trident/model/dropout_site.hpp"
#include "trident/model/mlp.hpp"
#include "trident/model/moe.hpp"
#include "trident/model/norm.hpp"

namespace trident::model {

// Which halves of a block a stage holds.
enum class BlockParts { kWhole, kAttention, kMlp };

// The parts a block's holder leaves undefined stay so (a half block fills its half only).
struct BlockActivations {
  NormActivations norm1;  // [R, C]
  AttentionActivations attn;
  Tensor mid;  // [R, C] h, the residual stream between attention and MLP (whole blocks only)
  NormActivations norm2;  // [R, C]
  MlpActivations mlp;     // dense layers
  MoeActivations moe;     // mixture-of-experts layers
};

// Temporaries shared by all blocks.
struct BlockScratch {
  Tensor gathered;   // [N, C] a norm output gathered from all ranks' rows (sequence parallel)
  Tensor partial;    // [N, C] a branch output before it is summed over the tp group / its gradient
  Tensor dnorm;      // [N, C] gradient of the (gathered) norm output
  Tensor dnorm_rows; // [R, C] ... summed over the group, this rank's rows
  Tensor branch;     // [R, C] a branch output (or its gradient) on its way through dropout
  // [N, C] mixed precision: a dense branch's output gradient rounded to 16 bits once, for both
  // GEMMs of its output projection (else undefined).
  Tensor dbranch_low;
  AttentionScratch attn;
  MlpScratch mlp;
  MoeScratch moe;
};

// Generation temporaries for N new rows, shared by all blocks (whole rows, compute dtype).
struct DecodeScratch {
  NormActivations norm;    // [N, C]
  DecodeAttention attn;
  MlpActivations mlp;      // [N, F/tp]
  MoeActivations moe;      // mixture-of-experts layers
  Tensor branch;           // [N, C] a branch's complete output
  // The first `rows` rows of every buffer (a call with fewer new tokens).
  DecodeScratch rows(int64_t rows) const;
};

// Buffers shared by blocks that hold different halves or kinds (dense, MoE): each part `from`
// defines replaces into's, so overlaying one block of each kind gives buffers for all of them.
void overlay(BlockActivations& into, const BlockActivations& from);
void overlay(BlockScratch& into, const BlockScratch& from);
void overlay(DecodeScratch& into, const DecodeScratch& from);

class TransformerBlock {
 public:
  // ep: the group that splits an MoE layer's experts (expert parallelism). parts: the halves
  // this rank holds (only their parameters are created).
  TransformerBlock(ParamStore& store, int index, const ModelConfig& cfg, TensorParallel tp = {}, ExpertParallel ep = {},
                   BlockParts parts = BlockParts::kWhole);
  // attention = false leaves a.attn empty (selective recompute shares one set).
  // stored: the dtype of the activations kept for backward that feed GEMMs and attention
  // (16 bits under mixed precision); the residual stream and statistics stay in dtype.
  BlockActivations make_activations(Ops& ops, int64_t batch, DType dtype, bool attention = true,
                                    std::optional<DType> stored = {}) const;
  // gathered (the all-gathered norm output, sequence parallelism) in `stored` like the norm output.
  // gradients: the branches' internal gradients in this 16-bit dtype (GEMMs computing in it:
  // rounded once where made, read as they are), else in dtype.
  BlockScratch make_scratch(Ops& ops, int64_t batch, DType dtype, std::optional<DType> stored = {},
                            std::optional<DType> gradients = {}) const;

  // Dropout applies to each branch before it joins the residual stream (when the site is active).
  // lora: on the adapters' input, first_index the micro-batch's first global row.
  struct Dropout {
    DropoutSite attn, mlp, lora;
  };

  // moe: what a mixture-of-experts layer records and the weight of its auxiliary losses.
  void forward(Ops& ops, const Tensor& x, const TokenPositions& positions, BlockActivations& a, Tensor& y, BlockScratch& s,
               const Dropout& dropout, const MoeStep& moe = {}) const;
  // Selective recompute: rebuilds a.attn (q, k, v, attention output, lse) from a.norm1 (a no-op
  // for an MLP half).
  void recompute_attention(Ops& ops, const TokenPositions& positions, BlockActivations& a, BlockScratch& s,
                           const DropoutSite& lora = {}) const;
  // Generation: x [N = B*S, C] (whole rows) becomes the block's output for S new tokens per
  // sequence at positions start[b] + s; their keys and values join the layer's cache.
  void decode(Ops& ops, Tensor& x, const Tensor& positions, const Tensor& start, KvCache& cache,
              DecodeScratch& s) const;
  // An MLP half keeps no cache (empty KvCache).
  KvCache make_cache(Ops& ops, int64_t batch, int64_t length, DType dtype) const {
    return attn_ ? attn_->make_cache(ops, batch, length, dtype) : KvCache{};
  }
  DecodeScratch make_decode_scratch(Ops& ops, int64_t rows, DType dtype) const;
  // The norms' parameter gradients: with sequence parallelism each rank holds a part of them
  // (from its rows), summed over the tp group once per step.
  std::vector<Tensor> norm_grads() const;
  // The per-head q/k norms' gradients (qk_norm): partial sums of this rank's heads under
  // tensor parallelism, summed over the group once per step.
  std::vector<Tensor> head_norm_grads() const { return attn_ ? attn_->head_norm_grads() : std::vector<Tensor>{}; }
  // Gradients of replicated weights that tensor parallelism leaves partial on each rank: the
  // per-head q/k norms (qk_norm) and an MoE layer's router and shared gate. Summed over the
  // group once per step.
  std::vector<Tensor> tp_partial_grads() const;
  bool is_moe() const { return moe_ != nullptr; }
  bool has_attention() const { return attn_.has_value(); }
  bool has_mlp() const { return mlp_ || moe_; }
  // What shapes the block's buffers: which halves it holds, and dense or MoE.
  std::tuple<bool, bool, bool> kind() const { return {has_attention(), has_mlp(), is_moe()}; }
  // On entry dres = dL/dy; on return dres = dL/dx. Parameter gradients accumulate.
  void backward(Ops& ops, const Tensor& x, const TokenPositions& positions, const BlockActivations& a, Tensor& dres,
                BlockScratch& s, const Dropout& dropout) const;

 private:
  // h = x + drop(attn(norm1(x))) and y = h + drop(mlp(norm2(h))), each half on its own.
  void forward_attention(Ops& ops, const Tensor& x, const TokenPositions& positions, BlockActivations& a, Tensor& h,
                         BlockScratch& s, const Dropout& dropout) const;
  void forward_mlp(Ops& ops, const Tensor& h, BlockActivations& a, Tensor& y, BlockScratch& s, const Dropout& dropout,
                   const MoeStep& moe) const;
  // On entry dres = dL/dh (dL/dy); on return dL/dx (dL/dh).
  void backward_attention(Ops& ops, const Tensor& x, const TokenPositions& positions, const BlockActivations& a,
                          Tensor& dres, BlockScratch& s, const Dropout& dropout) const;
  void backward_mlp(Ops& ops, const Tensor& h, const BlockActivations& a, Tensor& dres, BlockScratch& s,
                    const Dropout& dropout) const;

  const ModelConfig& cfg_;
  TensorParallel tp_;
  std::optional<Norm> norm1_;  // attention half
  std::optional<Attention> attn_;
  std::optional<Norm> norm2_;  // MLP half
  std::unique_ptr<Mlp> mlp_;     // dense layers
  std::unique_ptr<MoeLayer> moe_;  // mixture-of-experts layers (moe.every)
};

}  // namespace trident::model
