// ModelConfig: the [model] section (docs/design.md section 5) and what follows from it: head size,
// parameter counts and the FLOPs of one token, used for MFU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/model/rope_scaling.hpp"
#include "trident/plan/model_shape.hpp"

namespace trident::model {

enum class Arch { kGPT2, kLlama };

// LoRA ([lora]): low-rank adapters y += (alpha / r) * x A^T B^T on the chosen projections, the
// base weights frozen. Off when r = 0.
struct LoraConfig {
  int r = 0;
  double alpha = 16;
  std::string targets = "q,v";  // comma list of q, k, v, o, up, down, gate
  double dropout = 0;           // on the adapters' input (training only), as PEFT's lora_dropout
  bool enabled() const { return r > 0; }
  double scale() const { return r > 0 ? alpha / r : 0.0; }
  // The rank of the adapter on projection `name` (q, k, ...): r when targeted, else 0.
  int rank_for(const std::string& name) const;
};

// Mixture of experts ([moe]): in MoE layers the MLP becomes `experts` MLPs of ffn_hidden
// features each, of which a linear router (softmax over experts) picks top_k per token; their
// outputs are summed with the routing weights. Off when experts = 0.
struct MoeConfig {
  int experts = 0;
  int top_k = 2;
  int ffn_hidden = 0;       // 0: model.ffn_hidden
  int every = 1;            // layer l is an MoE layer when (l + 1) % every == 0 (Qwen2-MoE's decoder_sparse_step)
  int shared_experts = 0;   // a shared MLP of shared_experts * ffn_hidden features behind a sigmoid gate (Qwen2-MoE)
  bool norm_topk_prob = true;  // renormalise the chosen k probabilities to sum to 1 (Mixtral; Qwen's flag)
  double aux_loss_coef = 0.01;  // load-balancing loss E * sum_e f_e * P_e (Switch / Mixtral), mean over MoE layers
  double z_loss_coef = 0;       // router z-loss mean_t logsumexp(logits_t)^2 (ST-MoE), mean over MoE layers
  double capacity_factor = 0;   // 0: dropless; else each expert takes ceil(factor * N * k / E) of a micro-batch's N tokens
  bool enabled() const { return experts > 0; }
  bool layer(int index) const { return enabled() && (index + 1) % every == 0; }
};

struct ModelConfig {
  Arch arch = Arch::kGPT2;
  int layers = 8;
  int hidden = 64;
  int heads = 4;
  int kv_heads = 0;     // 0: same as heads (multi-head attention)
  int ffn_hidden = 0;   // 0: 4*hidden (gpt2) or 8/3*hidden rounded up to 64 (llama)
  int vocab = 320;
  int seq_len = 64;
  bool tie_embeddings = true;
  double dropout = 0.0;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  bool qkv_bias = false;  // llama: q, k, v projections with biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;    // llama: the o projection with a bias (Llama's attention_bias)
  int head_dim = 0;       // attention head size (0: hidden / heads; Qwen3 and Gemma set their own)
  bool qk_norm = false;   // llama: RMSNorm of each query and key head before RoPE (Qwen3)
  // ... or of the whole q and k projections, all heads together (OLMoE, OLMo 2): weights
  // [heads * HS] and [kv_heads * HS] (model.qk_norm_scope = proj).
  bool qk_norm_whole = false;
  // The width one q/k norm statistic spans: a head, or the whole projection of `heads` heads.
  int qk_norm_width(int heads_in_projection) const { return qk_norm_whole ? heads_in_projection * head_size() : head_size(); }
  RopeScaling rope_scaling;
  // The positions the model was built for (config.json's n_positions / max_position_embeddings;
  // 0: seq_len): GPT-2's position table has this many rows, RoPE scaling may read it.
  int64_t max_positions = 0;
  // Sliding-window attention (Mistral, Qwen2 with use_sliding_window): query t sees keys
  // t - window + 1 .. t, in layers window_from .. layers - 1 (0 = no window).
  int sliding_window = 0;
  int window_from = 0;
  // Special token ids as the model defines them (config.json; -1: none). eos may be several.
  int64_t bos_token_id = -1, pad_token_id = -1;
  std::vector<int64_t> eos_token_ids;  // none, one or several
  LoraConfig lora;
  MoeConfig moe;

  // Fills kv_heads/ffn_hidden defaults and checks every rule; ConfigError names the key.
  void resolve();
  int head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }
  // Whether layer `layer` attends within the sliding window.
  bool windowed(int layer) const { return sliding_window > 0 && layer >= window_from; }
  int64_t positions() const { return max_positions > 0 ? max_positions : seq_len; }
  // The rotary embedding's frequencies (RoPE scaling included).
  RotaryFrequencies rotary() const {
    return rotary_frequencies(rope_scaling, rope_theta, head_size(), positions());
  }
  // Vocabulary rows held by the model: vocab rounded up to a multiple of tp, so the
  // vocabulary-parallel embedding and head split evenly (padding ids are never predicted).
  int padded_vocab(int tp) const { return (vocab + tp - 1) / tp * tp; }
  // ConfigError unless the model splits over tp ranks (heads, kv_heads, ffn_hidden).
  void check_tensor_parallel(int tp) const;
  bool has_bias() const { return arch == Arch::kGPT2; }
  bool learned_positions() const { return arch == Arch::kGPT2; }
  bool gated_mlp() const { return arch == Arch::kLlama; }

  int moe_layers() const;  // layers whose MLP is a mixture of experts
  // The model's sizes as plan::ModelShape, which counts its parameters and FLOPs (the one
  // formula; plan/ sits below model/): the one conversion.
  plan::ModelShape plan_shape() const;
  // Counts of plan_shape(), whole: the matmul weights a token multiplies by (the 6N rule's N),
  // everything (adapters included), the adapters, and the training FLOPs per token.
  int64_t matmul_params() const;
  int64_t total_params() const;
  int64_t lora_params() const;
  double train_flops_per_token() const { return plan_shape().train_flops_per_token(); }
};

Arch arch_from_name(const std::string& name);
const char* arch_name(Arch arch);

}  // namespace trident::model
