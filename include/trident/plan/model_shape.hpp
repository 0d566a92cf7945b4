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

  // Fills the defaults and checks the sizes (ConfigError names the field).
  void resolve();
  int head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  bool gated() const { return arch == ModelArch::kLlama; }

  // Parameters of one block (matmuls, norms and biases), of the embedding tables and of the head.
  double block_params() const;
  double embedding_params() const;  // token (+ learned positions for gpt2)
  double head_params() const;       // 0 when tied (the table is shared)
  double total_params() const;
  // Forward FLOPs of one block's matmuls (QKV, projection, MLP) per token, and of its attention
  // scores and values per token (full s x s, the SC21 convention).
  double block_gemm_flops_per_token() const;
  double block_attention_flops_per_token() const;
  double head_flops_per_token() const { return 2.0 * double(vocab) * hidden; }
  // Model FLOPs of one training step per token (forward + backward, no recompute).
  double train_flops_per_token() const;
};

// "layers=L,hidden=H,heads=A,vocab=V[,ffn=F][,arch=gpt2|llama][,kv_heads=K][,seq=S][,tied=0|1]
// [,dropout=0|1]". ConfigError on an unknown or malformed key.
ModelShape parse_model_spec(const std::string& spec);
bool looks_like_model_spec(const std::string& text);  // has '=' and no path separator

const char* model_arch_name(ModelArch arch);

}  // namespace trident::plan
