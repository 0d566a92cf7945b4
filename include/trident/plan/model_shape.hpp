// The shape of a transformer as the planner sees it: sizes only, no weights. The plan layer sits
// below model/ (docs/design.md section 1), so the cli converts a ModelConfig into this.
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
  // Parameters of one block (matmuls, norms and biases; the mean over layers when some are MoE
  // layers), of the embedding tables and of the head.
  double block_params() const;
  // The experts' share of block_params (what expert parallelism splits over ep ranks).
  double block_expert_params() const;
  double embedding_params() const;  // token (+ learned positions for gpt2)
  double head_params() const;       // 0 when tied (the table is shared)
  double total_params() const;
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
  // Model FLOPs of one training step per token (forward + backward, no recompute).
  double train_flops_per_token() const;
};

// "layers=L,hidden=H,heads=A,vocab=V[,ffn=F][,arch=gpt2|llama][,kv_heads=K][,seq=S][,tied=0|1]
// [,dropout=0|1][,experts=E,top_k=K,moe_ffn=F,moe_every=N,shared_ffn=F]". ConfigError on an
// unknown or malformed key.
ModelShape parse_model_spec(const std::string& spec);
bool looks_like_model_spec(const std::string& text);  // has '=' and no path separator

const char* model_arch_name(ModelArch arch);

}  // namespace trident::plan
