// Causal self-attention with grouped KV heads: q, k, v projections, per-head q/k RMSNorm
// (Qwen3, qk_norm), rotary embedding (llama, with its RoPE scaling), fused flash-style attention
// kernel (within a sliding window in windowed layers), output projection added onto the residual
// stream.
// Tensor-parallel: each rank holds NH/tp query and NKV/tp key/value heads (q, k, v
// column-parallel, o row-parallel). Shapes below are per rank, NH and NKV the local counts.
// x: [N, C] (normalised input), q: [B, T, NH*HS], k, v: [B, T, NKV*HS], lse: [B, NH, T].
#pragma once
#include <array>
#include <optional>
#include <string>

#include "trident/model/dropout_site.hpp"
#include "trident/model/linear.hpp"
#include "trident/model/model_config.hpp"
#include "trident/model/norm.hpp"
#include "trident/model/token_positions.hpp"

namespace trident::model {

struct AttentionActivations {
  Tensor q, k, v;  // after rotary embedding
  Tensor out;      // [B, T, NH*HS] attention output, input of the o projection
  Tensor lse;      // [B, NH, T]
  // qk_norm: the projections before their norm, and the norms' statistics ([B*T*NH] / [B*T*NKV]).
  Tensor q_raw, k_raw, q_rstd, k_rstd;
};

// Generation: the keys and values (after rotary embedding) of every position so far, per layer.
// k, v: [B, L, NKV*HS], L the longest sequence the decoder serves.
struct KvCache {
  Tensor k, v;
};

// Generation temporaries for N = B*S new rows, shared by all layers: q, attention output
// [N, NH*HS], the new keys and values [N, NKV*HS].
struct DecodeAttention {
  Tensor q, k, v, out;
  Tensor q_raw, k_raw, q_rstd, k_rstd;  // qk_norm
  Tensor lse;  // [N*NH] a prefill's softmax statistics (the flash kernel writes them)
};

// Backward temporaries, shared by all blocks.
struct AttentionScratch {
  Tensor dout, dq, dk, dv;
  Tensor dq_raw, dk_raw;  // qk_norm: gradients before the norms
};

class Attention {
 public:
  // layer: this block's index (sliding-window layers).
  Attention(ParamStore& store, const std::string& prefix, const ModelConfig& cfg, TensorParallel tp = {},
            int layer = 0);
  // q, k, v, out in `stored` (16 bits under mixed precision), lse in dtype.
  AttentionActivations make_activations(Ops& ops, int64_t batch, DType dtype, std::optional<DType> stored = {}) const;
  AttentionScratch make_scratch(Ops& ops, int64_t batch, DType dtype) const;

  // out = o(attention(x)), or out += o(attention(x)) when accumulate (onto the residual stream).
  // Under tensor parallelism out is this rank's partial sum [N, C]: finish_output completes it.
  // lora: dropout on the adapters' input (training). positions: TokenPositions.
  void forward(Ops& ops, const Tensor& x, const TokenPositions& positions, AttentionActivations& a, Tensor& out,
               bool accumulate, const DropoutSite& lora = {}) const;
  // The activations of forward without the output projection: q, k, v, rotary, attention
  // (selective recompute rebuilds them during backward).
  void recompute(Ops& ops, const Tensor& x, const TokenPositions& positions, AttentionActivations& a,
                 const DropoutSite& lora = {}) const;
  // Generation: S new tokens per sequence (x: [N = B*S, C], whole rows, no sequence
  // parallelism) at positions (int32 [N], device) start[b] + s (start: int32 [B], host).
  // Their keys and values go into the cache, the queries attend over it; out = the complete
  // output [N, C] (summed over the tensor-parallel group, bias added).
  void decode(Ops& ops, const Tensor& x, const Tensor& positions, const Tensor& start, KvCache& cache,
              DecodeAttention& s, Tensor& out) const;
  KvCache make_cache(Ops& ops, int64_t batch, int64_t length, DType dtype) const;
  DecodeAttention make_decode_scratch(Ops& ops, int64_t rows, DType dtype) const;

  // Sums the partial outputs over the group into this rank's rows and adds the bias; returns
  // where the result is (rows, or partial itself without sequence parallelism).
  Tensor& finish_output(Ops& ops, Tensor& partial, Tensor& rows) const;
  // The q/k norms' weight gradients: partial sums of this rank's heads under tensor
  // parallelism, which the model sums over the group (empty without qk_norm).
  std::vector<Tensor> head_norm_grads() const;
  bool windowed() const { return window_ > 0; }
  // dx = d(x) from dout (overwritten; under tensor parallelism this rank's partial sum);
  // parameter gradients accumulate.
  void backward(Ops& ops, const Tensor& x, const TokenPositions& positions, const AttentionActivations& a,
                const Tensor& dout, AttentionScratch& s, Tensor& dx, const DropoutSite& lora = {}) const;

 private:
  // x [N, C] -> q, k, v of b (AttentionActivations or DecodeAttention): the projections, the
  // per-head norms (qk_norm, from b's raw copies) and the rotary embedding at `positions`.
  // qk_norm: the norms' statistics for `rows` rows (one per head, or per row).
  void make_norm_statistics(Ops& ops, int64_t rows, DType dtype, Tensor& q_rstd, Tensor& k_rstd) const;
  template <typename Buffers>
  void project(Ops& ops, const Tensor& x, const Tensor& positions, Buffers& b, const DropoutSite& lora) const;

  const ModelConfig& cfg_;
  TensorParallel tp_;
  int heads_, kv_heads_;  // on this rank
  int window_ = 0;        // sliding window of this layer (0: none)
  RotaryFrequencies rotary_;
  std::array<Parameter*, 3> qkv_weights_;  // q, k, v weights, registered side by side
  Linear q_, k_, v_, o_;
  std::optional<Norm> q_norm_, k_norm_;  // qk_norm: RMSNorm over each head's HS features
};

}  // namespace trident::model
