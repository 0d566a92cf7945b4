// Hugging Face config.json <-> ModelConfig for the families trident runs, as transformers 4 and
// 5 write them: GPT-2 (GPT2LMHeadModel), Llama (attention_bias, head_dim, RoPE scaling linear /
// llama3 / yarn), Mistral (Llama with a sliding window on every layer), Qwen2 (q/k/v biases,
// sliding window on the last layers) and Qwen3 (per-head q/k norms). Every key is either read or
// known not to change the computation; anything else (another rope type or activation, a key
// trident does not know) is rejected with a message naming it, rather than loaded into a model
// that is silently wrong. Weight names live in hf_names.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "trident/core/json.hpp"
#include "trident/model/model_config.hpp"

namespace trident::interop {

// Mixture of experts: Mixtral (Mistral blocks, every MLP 8 experts of intermediate_size, top-k
// renormalised), Qwen2-MoE (Qwen2 blocks, experts of moe_intermediate_size every
// decoder_sparse_step layers, a shared expert behind a sigmoid gate, norm_topk_prob) and
// Qwen3-MoE (Qwen3 blocks, no shared expert) and OLMoE (q/k norms over the whole projections,
// every MLP experts of intermediate_size).
enum class HfFamily { kGPT2, kLlama, kMistral, kQwen2, kQwen3, kMixtral, kQwen2Moe, kQwen3Moe, kOlmoe };
const char* hf_family_name(HfFamily family);  // its config.json model_type

struct HfModelInfo {
  HfFamily family = HfFamily::kLlama;
  model::ModelConfig config;  // seq_len stays at its default (the run chooses it); max_positions is set
};

// Parses a config.json document; `where` names the file in errors (ConfigError).
HfModelInfo parse_hf_config(const Json& json, const std::string& where);
// DIR/config.json.
HfModelInfo read_hf_config(const std::string& dir);
// Whether path is a Hugging Face model directory (holds config.json).
bool is_hf_model_dir(const std::string& path);

// The HF family a trident model exports as: gpt2; qwen3 with qk_norm; qwen2 with q/k/v biases
// but none on o; mistral with a window on every layer; else llama. MoE models: qwen3_moe with
// qk_norm, mixtral with renormalised weights in every layer and no biases or shared expert,
// else qwen2_moe. ConfigError for a model no family describes.
HfFamily hf_family_for(const model::ModelConfig& cfg);
// That family, with max_positions filled (seq_len when the model has none of its own).
HfModelInfo hf_info_for(const model::ModelConfig& cfg);
// config.json for a trident model, loadable by transformers' AutoModelForCausalLM (4 and 5);
// torch_dtype names the stored weights' type ("float32" | "bfloat16").
Json hf_config_json(const model::ModelConfig& cfg, const std::string& torch_dtype = "float32");
// generation_config.json: the bos and eos ids (generate() stops at eos).
Json hf_generation_config_json(const model::ModelConfig& cfg);


// The tokenizer that comes with a model: DIR/tokenizer.json for an HF model directory that has
// one, else "" (prep and generation use it when no tokenizer is named).
std::string model_tokenizer_path(const std::string& init_from);

}  // namespace trident::interop
