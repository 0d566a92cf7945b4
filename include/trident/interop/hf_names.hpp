// Where each trident parameter lives in a Hugging Face checkpoint. trident weights are
// [out, in] like torch.nn.Linear, so Llama-family projections map one to one; GPT-2 stores its
// projections as Conv1D ([in, out], read transposed) and fuses q, k, v into attn.c_attn
// ([C, 3C]: q at output columns [0, C), k at [C, 2C), v at [2C, 3C)).
//
//   trident                    GPT-2 (transformer.)          Llama / Mistral / Qwen2 / Qwen3 (model.)
//   embed.tok.weight  [V, C]   wte.weight                    embed_tokens.weight
//   embed.pos.weight  [P, C]   wpe.weight                    -
//   blocks.L.attn_norm         h.L.ln_1                      layers.L.input_layernorm
//   blocks.L.attn.q/k/v        h.L.attn.c_attn (fused, T)    layers.L.self_attn.q_proj/k_proj/v_proj
//   blocks.L.attn.q_norm/k_norm -                            layers.L.self_attn.q_norm/k_norm (Qwen3)
//   blocks.L.attn.o            h.L.attn.c_proj (T)           layers.L.self_attn.o_proj
//   blocks.L.mlp_norm          h.L.ln_2                      layers.L.post_attention_layernorm
//   blocks.L.mlp.up/down       h.L.mlp.c_fc/c_proj (T)       layers.L.mlp.up_proj/down_proj
//   blocks.L.mlp.gate          -                             layers.L.mlp.gate_proj
//   final_norm                 ln_f                          norm
//   head.weight (untied)       lm_head.weight                lm_head.weight
// (T: transposed.) The token table's vocabulary padding rows (tensor parallelism) are not in
// the HF tensor: they load as zeros and are dropped on export.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trident/core/tensor.hpp"

#include "trident/interop/hf_config.hpp"

namespace trident::interop {

// The HF tensor holding a trident parameter: its name, its whole shape, and how trident's
// element (r, c) maps into it: (r + offset, c), or transposed (c, r + offset); a vector's
// element c is the HF vector's c + offset.
struct HfSource {
  std::string name;
  std::vector<int64_t> shape;
  bool transpose = false;
  int64_t offset = 0;
};

// Every parameter of a whole model (one rank, no padding) with its stored global shape, in the
// model's order, without allocating it.
std::vector<std::pair<std::string, Shape>> stored_parameter_shapes(const model::ModelConfig& cfg);

// ConfigError for a trident parameter the family has no place for.
HfSource hf_source(const HfModelInfo& info, const std::string& trident_name);

// Other names the same HF tensor may carry in older checkpoints (GPT-2 saved without the
// "transformer." prefix).
std::vector<std::string> hf_name_candidates(const HfModelInfo& info, const std::string& hf_name);

}  // namespace trident::interop
