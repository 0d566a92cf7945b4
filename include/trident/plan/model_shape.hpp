// The shape of a transformer: sizes only, no weights. The one place its parameters and FLOPs are
// counted: the planner reads it from a spec, and model::ModelConfig converts itself into one
// (plan_shape()) for its own counts (the plan layer sits below model/, docs/design.md section 1).
#pragma once
#include <cstdint>
#include <string>

namespace trident::plan {

enum class ModelArch { kGPT2, kLlama };

struct ModelShape {
  ModelArch arch = ModelArch::kGPT2;
  int layers = 0;
  int hidden = 0;    // h
  int heads = 0;     // a
  int head_dim = 0;  // 0: hidden / heads
  int kv_heads = 0;  // 0: same as heads
  int ffn = 0;       // 0: 4h (gpt2) or 8h/3 rounded up to 64 (llama)
  int vocab = 0;     // V
  int seq = 0;       // s, tokens per sequence
  bool tied = true;     // input embedding shared with the head
  bool dropout = false; // dropout active: a stack that stores masks keeps them
  // Mixture of experts (experts = 0: dense): layer l is an MoE layer when (l + 1) % moe_every
  // == 0; its MLP is `experts` MLPs of moe_ffn features behind a router, top_k per token, and a
  // shared MLP of shared_ffn features (0: none) behind a sigmoid gate.
  int experts = 0, top_k = 0, moe_ffn = 0, moe_every = 1, shared_ffn = 0;
  // What a built model holds beyond the planner's specs (ModelConfig::plan_shape sets them).
  bool qkv_bias = false;       // llama: q, k, v projections with biases
  bool o_bias = false;         // llama: the o projection with a bias
  int q_norm = 0, k_norm = 0;  // per block: the q and k norm weights (qk_norm; 0: none)
  int64_t positions = 0;       // rows of gpt2's learned position table (0: seq)
  // LoRA: the adapter rank on each projection (0: none); an adapter of rank r on a projection
  // of `in` inputs and `out` outputs holds r * (in + out) parameters.
  struct LoraRanks {
    int q = 0, k = 0, v = 0, o = 0, up = 0, gate = 0, down = 0;
  } lora = {};

  // Fills the defaults and checks the sizes (ConfigError names the field).
  void resolve();
  int head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  bool gated() const { return arch == ModelArch::kLlama; }

  int moe_layers() const;
  bool moe_layer(int l) const { return experts > 0 && (l + 1) % moe_every == 0; }
  double moe_fraction() const { return double(moe_layers()) / layers; }
  // One MLP of f hidden features: matmul weights (+ biases for gpt2).
  double mlp_params(double f) const;
  // Parameters of layer l's block (matmuls, norms, biases; the experts, router and shared MLP
  // in an MoE layer; no adapters), and their mean over layers.
  double layer_params(int l) const;
  double block_params() const;
  // The experts' share of block_params (what expert parallelism splits over ep ranks).
  double block_expert_params() const;
  double embedding_params() const;  // token (+ learned positions for gpt2)
  double head_params() const;       // 0 when tied (the table is shared)
  double final_norm_params() const; // the norm before the head
  double lora_params() const;       // the adapters' (0 without LoRA)
  double total_params() const;      // everything, adapters included
  // The matmul weights one token multiplies by: q, k, v, o, the MLP (router, top_k experts and
  // the shared MLP in an MoE layer) of every layer, and the head.
  double matmul_params() const;
  // Forward FLOPs of one block's matmuls (QKV, projection, MLP: the router, k experts and the
  // shared MLP in an MoE layer; the mean over layers) per token, and of its attention scores and
  // values per token (full s x s, the SC21 convention). layer_gemm_flops_per_token: layer l's own.
  double block_gemm_flops_per_token() const;
  double layer_gemm_flops_per_token(int l) const;
  // Its two halves: the q, k, v and o projections; the MLP (router, experts, shared MLP).
  double attention_gemm_flops_per_token() const;
  double mlp_gemm_flops_per_token(int l) const;
  double block_attention_flops_per_token() const;
  double head_flops_per_token() const { return 2.0 * double(vocab) * hidden; }
  // Model FLOPs of one training step per token (forward + backward, no recompute): 6 per
  // matmul parameter plus the attention's; under LoRA the frozen weights compute no weight
  // gradient (4 per parameter) and the adapters add 6 per parameter.
  double train_flops_per_token() const;
};

// "layers=L,hidden=H,heads=A,vocab=V[,ffn=F][,arch=gpt2|llama][,kv_heads=K][,seq=S][,tied=0|1]
// [,dropout=0|1][,experts=E,top_k=K,moe_ffn=F,moe_every=N,shared_ffn=F]". ConfigError on an
// unknown or malformed key.
ModelShape parse_model_spec(const std::string& spec);
bool looks_like_model_spec(const std::string& text);  // has '=' and no path separator

const char* model_arch_name(ModelArch arch);

}  // namespace trident::plan
